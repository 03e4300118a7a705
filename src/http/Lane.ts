/**
 * The fast lane: hot endpoints (Hot.ts) answered straight from Node's
 * `request` event, without the Effect HTTP platform, whose request object,
 * router, middleware chain and response conversion cost about 350 µs of CPU
 * per request here, more than deciding.
 *
 * The lane takes only requests of the ordinary shape: a hot endpoint's
 * route, a JSON content type, a declared length within the body limit, no
 * chunked body, no shutdown in progress. Everything else falls through to
 * the request pipeline (Pipeline.ts), which answers it as it always did.
 * A request the lane takes is first offered to the endpoint's direct run
 * (warm state, no fiber; `HotUseCase.direct`), which declines before doing
 * anything when a step needs something; then the Effect run answers it.
 * Both read the body with the same parse (Body.ts), authenticate with the
 * same authenticator, decode and encode with the contract's own schemas and
 * answer errors with the same bodies as the pipeline; both stamp
 * `x-request-id` and record the request (AccessLog.ts).
 */
import * as Headers from "@effect/platform/Headers"
import { Effect, Either, Exit, Fiber, type ParseResult, Runtime, Schema, Scope } from "effect"
import type { IncomingMessage, ServerResponse } from "node:http"
import type { AuthenticationError, CredentialRequest } from "../identity/Authenticator.js"
import type { Caller } from "../identity/Authentication.js"
import { recordDirectRequest } from "../operations/Metrics.js"
import { enterRequest, leaveRequest, type Traffic } from "../operations/Drain.js"
import type { WarmUseCase } from "../platform/Warm.js"
import { requestAnswered } from "./AccessLog.js"
import { isJsonType, mediaTypeOf, parseJsonBody } from "./Body.js"
import { bearerTokenOf, withMessagesDialectKey } from "./Credential.js"
import { decodeReportingAll, type HttpError, schemaRefusal } from "./Errors.js"
import type { AnyHotEndpoint, HotRequest } from "./Hot.js"
import { requestIdOf } from "./RequestInfo.js"
import { findRoute, pathParams, type RouteEntry } from "./Routes.js"
import { answerOf, type LaneAnswer, logProblem, type SuccessEncoding, writeAnswer } from "./Writes.js"

/** Offered every request first; answers true when it took the request. */
export type LaneListener = (request: IncomingMessage, response: ServerResponse) => boolean

export interface LaneOptions {
  readonly routes: ReadonlyArray<RouteEntry>
  readonly endpoints: ReadonlyArray<AnyHotEndpoint>
  readonly authenticator: WarmUseCase<CredentialRequest, Caller, AuthenticationError>
  readonly maxBodyBytes: number
  readonly traffic: Traffic
  /** Whether info logs (the access log) are kept. */
  readonly logs: boolean
  readonly runtime: Runtime.Runtime<never>
}

/** A hot endpoint with the contract's decoders and encoder of its route. */
interface LaneRoute {
  readonly route: RouteEntry
  readonly hot: AnyHotEndpoint
  readonly decodePath: (input: unknown) => Effect.Effect<unknown, ParseResult.ParseError>
  readonly decodePathNow: (input: unknown) => Either.Either<unknown, ParseResult.ParseError>
  readonly decodePayload: (input: unknown) => Effect.Effect<unknown, ParseResult.ParseError>
  readonly decodePayloadNow: (input: unknown) => Either.Either<unknown, ParseResult.ParseError>
  readonly success: SuccessEncoding
}

const identity = <A>(value: A) => Effect.succeed(value)
const identityNow = <A>(value: A) => Either.right(value)

const laneRouteOf = (route: RouteEntry, hot: AnyHotEndpoint): LaneRoute => {
  const { pathSchema, payloadSchema } = route
  return {
    route,
    hot,
    decodePath: pathSchema === undefined ? identity : decodeReportingAll(pathSchema),
    decodePathNow: pathSchema === undefined ? identityNow : Schema.decodeUnknownEither(pathSchema),
    decodePayload: hot.raw || payloadSchema === undefined ? identity : decodeReportingAll(payloadSchema),
    decodePayloadNow: hot.raw || payloadSchema === undefined ? identityNow : Schema.decodeUnknownEither(payloadSchema),
    success: { raw: hot.raw, status: route.successStatus, encode: Schema.encodeEither(route.successSchema) }
  }
}

/** The use case's request; its path and body were decoded by the contract's schemas of this very endpoint. */
const hotRequest = (
  caller: Caller,
  path: unknown,
  payload: unknown,
  headers: Headers.Headers,
  requestId: string,
  startedAt: number
): HotRequest<never, never> =>
  ({ caller, path, payload, headers, requestId, startedAt }) as HotRequest<unknown, unknown> as HotRequest<never, never>

/** Waits until the response is closed: its last byte went out, or the client went away. */
const untilClosed = (response: ServerResponse) =>
  Effect.async<void>((resume) => {
    if (response.closed) return resume(Effect.void)
    response.once("close", () => resume(Effect.void))
  })

export const makeLane = (options: LaneOptions): LaneListener => {
  const byKey = new Map<string, LaneRoute>()
  for (const hot of options.endpoints) {
    const route = options.routes.find((entry) => entry.group === hot.group && entry.endpoint === hot.endpoint)
    if (route === undefined) throw new Error(`hot endpoint ${hot.group}.${hot.endpoint} is not in the contract`)
    byKey.set(`${route.group}.${route.endpoint}`, laneRouteOf(route, hot))
  }
  const runFork = Runtime.runFork(options.runtime)

  return (request, response) => {
    if (options.traffic.draining || request.method !== "POST") return false
    const url = request.url ?? ""
    const route = findRoute(options.routes, "POST", url)
    const lane = route === undefined ? undefined : byKey.get(`${route.group}.${route.endpoint}`)
    if (route === undefined || lane === undefined) return false
    const length = Number(request.headers["content-length"])
    const ordinary =
      length > 0 &&
      length <= (route.maxBodyBytes ?? options.maxBodyBytes) &&
      request.headers["transfer-encoding"] === undefined &&
      isJsonType(mediaTypeOf(request.headers["content-type"])) &&
      !/%00/i.test(url)
    if (!ordinary) return false

    const startedAt = performance.now()
    const requestId = requestIdOf(request.headers["x-request-id"])
    // In flight from now (as in the pipeline, body reading included) until answered or abandoned.
    enterRequest(options.traffic)
    let counted = true
    const leave = () => {
      if (counted) leaveRequest(options.traffic)
      counted = false
    }
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.once("error", () => {
      leave()
      response.destroy()
    })
    request.once("close", () => {
      if (!request.complete) leave() // the client went away mid-body
    })

    const headers = withMessagesDialectKey(Headers.fromInput(request.headers), route)
    const credential: CredentialRequest = {
      token: bearerTokenOf(headers),
      workspaceHeader: headers["x-service-workspace-id"],
      group: route.group,
      endpoint: route.endpoint,
      method: "POST"
    }
    const params = pathParams(route, url)
    /** Writes the answer and records the request; answers the access-log line to write. */
    const answered = (answer: LaneAnswer) => {
      writeAnswer(response, answer, requestId)
      return requestAnswered(
        { requestId, method: "POST", template: route.template, path: route.template, status: answer.status, startedAt },
        options.logs
      )
    }

    /**
     * The direct run: true when it took the request (it answers later); false, having done nothing, else. Only
     * a request whose every step is ready is taken: a refusal is answered by the Effect run, from the same steps.
     */
    const tookDirectly = (text: string) => {
      const body = parseJsonBody(text)
      if (Either.isLeft(body)) return false
      const authenticated = options.authenticator.now(credential)
      if (authenticated._tag !== "Ready") return false
      const reply = (outcome: Exit.Exit<unknown, HttpError>) => {
        if (response.destroyed) return // the client left; what was done stands
        const { answer, problem } = answerOf(outcome, lane.success, requestId)
        const line = answered(answer)
        // No fiber at all for an ordinary answer when the access log is off.
        if (problem !== undefined || options.logs) runFork(Effect.zipRight(logProblem(problem), line))
      }
      const path = lane.decodePathNow(params)
      const payload = lane.hot.raw ? Either.right({ text, json: body.right }) : lane.decodePayloadNow(body.right)
      if (Either.isLeft(path) || Either.isLeft(payload)) return false
      const input = hotRequest(authenticated.value, path.right, payload.right, headers, requestId, startedAt)
      const run = lane.hot.useCase.direct(input, reply)
      if (!run.taken) return false
      response.once("close", run.closed)
      recordDirectRequest(route.template)
      response.once("close", leave)
      return true
    }

    /** The Effect run: every outcome answered, in the request's scope (closed once the answer is out). */
    const respond = (text: string, scope: Scope.Scope) =>
      Effect.gen(function* () {
        const outcome = yield* Effect.exit(
          Effect.gen(function* () {
            const body = yield* Either.match(parseJsonBody(text), { onLeft: Effect.fail, onRight: Effect.succeed })
            const caller = yield* options.authenticator.settle(credential)
            const path = yield* Effect.mapError(lane.decodePath(params), schemaRefusal)
            const payload = lane.hot.raw
              ? { text, json: body }
              : yield* Effect.mapError(lane.decodePayload(body), schemaRefusal)
            const input = hotRequest(caller, path, payload, headers, requestId, startedAt)
            return yield* Scope.extend(lane.hot.useCase.run(input), scope)
          })
        )
        const { answer, problem } = answerOf(outcome, lane.success, requestId)
        yield* logProblem(problem)
        yield* answered(answer)
        // The request's scope stays open while a streamed answer is still going out.
        yield* untilClosed(response)
      })

    request.once("end", () => {
      const text = Buffer.concat(chunks).toString("utf8")
      if (lane.hot.direct && tookDirectly(text)) return
      // The request's scope closes when the answer is out or the client left: its finalizers (the gateway's usage
      // record) run then.
      const program = Effect.acquireUseRelease(
        Scope.make(),
        (scope) => respond(text, scope),
        (scope, exit) => Scope.close(scope, exit)
      ).pipe(
        Effect.ensuring(Effect.sync(leave)),
        // The same server span the platform's handler opens for the requests it serves.
        Effect.withSpan("http.server POST", { kind: "server", attributes: { "http.route": route.template } }),
        Effect.annotateLogs({ request_id: requestId, route: route.template })
      )
      const fiber = runFork(program)
      // A client gone before its answer interrupts the handler, as the platform's server does.
      response.once("close", () => {
        if (!response.headersSent) runFork(Fiber.interrupt(fiber))
      })
    })
    return true
  }
}
