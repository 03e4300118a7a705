/**
 * The fast lane: hot endpoints (agents' `POST /v1/events`, run-event
 * appends) answered straight from Node's `request` event, without the Effect
 * HTTP platform. Its request object, router, middleware chain and response
 * conversion cost about 350 µs of CPU per request here, more than deciding.
 *
 * The lane takes only requests of the ordinary shape: a route it serves, a
 * JSON content type, a declared length within the body limit, no chunked
 * body, no shutdown in progress. Everything else (wrong media type, oversized
 * or chunked bodies, draining) falls through to the full request pipeline,
 * which answers it as it always did. What the lane answers matches the
 * pipeline: `x-request-id`, the access-log line, request metrics, drain
 * accounting, the conventions' error body and the same error messages.
 */
import { Headers, HttpApiError, type HttpServerResponse } from "@effect/platform"
import { Cause, Context, Effect, Exit, Fiber, Option, ParseResult, Runtime, Scope } from "effect"
import type { IncomingMessage, ServerResponse } from "node:http"
import { pipeline, Readable } from "node:stream"
import { enterRequest, leaveRequest, type Traffic } from "../operations/Drain.js"
import { recordDirectRequest, recordRequest, recordRequestNow } from "../operations/Metrics.js"
import { BadRequest, errorBodyOf, errorHeadersOf, isHttpError, type HttpError, statusOf } from "./Errors.js"
import { findRoute, isJsonType, requestIdOf, type RouteEntry, validationFailed } from "./Pipeline.js"
import { unstorableJson } from "../platform/Json.js"
import { clientFaultOf } from "../platform/Sql.js"

/** What a lane endpoint gets: its route and path parameters, the request's headers and body (text and JSON). */
export interface FastRequest {
  readonly route: RouteEntry
  /** The request's id (its `x-request-id`, or a new one), as in its logs and answer. */
  readonly requestId: string
  readonly params: Readonly<Record<string, string>>
  readonly method: string
  readonly headers: Headers.Headers
  readonly text: string
  readonly body: unknown
}

export interface JsonAnswer {
  readonly status: number
  readonly body: unknown
  readonly headers?: Readonly<Record<string, string>>
}

/** A JSON answer, or a platform response whose body is bytes or a Node stream (the gateway's pass-through). */
export type FastAnswer = JsonAnswer | { readonly response: HttpServerResponse.HttpServerResponse }

/**
 * Answers a request, failing with an HTTP error or a schema ParseError (400
 * validation_failed). The request's scope closes once the answer is out (or
 * the client left), as in the platform's server.
 */
export type FastHandler = ((
  request: FastRequest
) => Effect.Effect<FastAnswer, HttpError | ParseResult.ParseError, Scope.Scope>) & {
  /** Tried first, when the body is well-formed JSON: see `DirectHandler`. */
  readonly direct?: DirectHandler
}

/**
 * Answers an ordinary request from warm in-memory state, without Effect: it
 * writes the response itself and calls `answered(status)` when the head is
 * out. Answers false, having done nothing, to leave the request to the
 * Effect handler (anything not in memory, any error to answer, any unusual
 * shape), which answers it the same way.
 */
export type DirectHandler = (
  request: FastRequest,
  response: ServerResponse,
  answered: (status: number) => void
) => boolean

/** The lane's handlers by `group.endpoint` of the contract. */
export class FastLaneRoutes extends Context.Tag("platform/FastLaneRoutes")<
  FastLaneRoutes,
  ReadonlyMap<string, FastHandler>
>() {}

/** Offered every request first; answers true when it took the request. */
export type FastListener = (request: IncomingMessage, response: ServerResponse) => boolean

/** The server's hook, filled by the app once its services are up (empty: every request takes the pipeline). */
export class FastLane extends Context.Tag("platform/FastLane")<FastLane, { listener: FastListener | undefined }>() {}

/** Writes a platform response: bytes, a Node stream piped with backpressure, or nothing. */
export const writePlatformResponse = (
  response: ServerResponse,
  answer: HttpServerResponse.HttpServerResponse,
  requestId: string
) => {
  const body = answer.body
  const headers: Record<string, string | number> = { ...answer.headers, "x-request-id": requestId }
  if (body.contentType !== undefined) headers["content-type"] = body.contentType
  if (body.contentLength !== undefined) headers["content-length"] = body.contentLength
  response.writeHead(answer.status, headers)
  if (body._tag === "Uint8Array") response.end(body.body)
  // As the platform's server does: a body that fails (or is destroyed) destroys the response, and the other way round.
  else if (body._tag === "Raw" && body.body instanceof Readable) pipeline(body.body, response, () => {})
  else response.end()
}

/** Writes a JSON answer with the request id. */
export const writeJson = (response: ServerResponse, reply: JsonAnswer, requestId: string) => {
  const json = JSON.stringify(reply.body)
  response.writeHead(reply.status, {
    ...reply.headers,
    "content-type": "application/json",
    "content-length": Buffer.byteLength(json),
    "x-request-id": requestId
  })
  response.end(json)
}

/** Writes the conventions' error body for `error` (for direct handlers; the Effect path answers the same); answers its status. */
export const writeHttpError = (response: ServerResponse, error: HttpError, requestId: string) => {
  const reply = errorReply(error)
  writeJson(response, reply, requestId)
  return reply.status
}

const errorReply = (error: HttpError): JsonAnswer => ({
  status: statusOf(error),
  body: errorBodyOf(error),
  headers: errorHeadersOf(error)
})

/** The conventions' 500, quoting the request id (for a defect the caller has logged). */
const internalError = (requestId: string): JsonAnswer => ({
  status: 500,
  body: {
    error: {
      code: "internal_error",
      message: `An internal error occurred; quote request id ${requestId} when reporting it.`,
      request_id: requestId
    }
  }
})

/** Writes the conventions' 500 for a logged defect (for direct handlers); answers its status. */
export const writeInternalError = (response: ServerResponse, requestId: string) => {
  writeJson(response, internalError(requestId), requestId)
  return 500
}

/** What to send for a handler's exit: its answer, its HTTP error, a 400 for a ParseError, else a logged 500. */
const replyOf = (exit: Exit.Exit<FastAnswer, HttpError | ParseResult.ParseError>, requestId: string) =>
  Effect.gen(function* () {
    if (Exit.isSuccess(exit)) return exit.value
    const failure = Cause.failureOption(exit.cause)
    if (Option.isSome(failure)) {
      const error = failure.value
      if (ParseResult.isParseError(error))
        return errorReply(validationFailed(yield* HttpApiError.HttpApiDecodeError.fromParseError(error)))
      if (isHttpError(error)) return errorReply(error)
    }
    const clientFault = clientFaultOf(Cause.squash(exit.cause))
    if (clientFault !== undefined) {
      yield* Effect.logWarning("database refused a client's value", exit.cause)
      return errorReply(clientFault)
    }
    yield* Effect.logError("unhandled failure", exit.cause)
    return internalError(requestId)
  })

const malformed = (error: unknown) =>
  new BadRequest({
    code: "malformed_json",
    message: `The request body is not valid JSON: ${error instanceof Error ? error.message : String(error)}.`
  })

/** The body as storable JSON, or undefined for anything `parseBody` would refuse. */
const storableJson = (text: string): { readonly value: unknown } | undefined => {
  if (text.trim() === "") return undefined
  try {
    const value: unknown = JSON.parse(text)
    return unstorableJson(value) === undefined ? { value } : undefined
  } catch {
    return undefined
  }
}

/** The body as JSON the database can store, or the pipeline's 400 for it. */
const parseBody = (text: string): Effect.Effect<unknown, BadRequest> => {
  if (text.trim() === "") return Effect.succeed(null)
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (error) {
    return Effect.fail(malformed(error))
  }
  const problem = unstorableJson(value)
  return problem === undefined
    ? Effect.succeed(value)
    : Effect.fail(
        new BadRequest({
          code: "validation_failed",
          message: `${problem.path === "" ? "body" : problem.path}: ${problem.message}`,
          details: [problem]
        })
      )
}

/** Waits until the response is closed: its last byte went out, or the client went away. */
const untilClosed = (response: ServerResponse) =>
  Effect.async<void>((resume) => {
    if (response.closed) return resume(Effect.void)
    response.once("close", () => resume(Effect.void))
  })

/** `:name` segments of the route's template, read from the URL's path (percent-decoded, as the router does). */
const pathParams = (route: RouteEntry, url: string) => {
  const params: Record<string, string> = {}
  const template = route.template.split("/")
  const path = url.split("?")[0]!.split("/")
  template.forEach((segment, index) => {
    if (segment.startsWith(":")) params[segment.slice(1)] = decodeURIComponent(path[index] ?? "")
  })
  return params
}

export interface FastLaneOptions<R> {
  readonly routes: ReadonlyArray<RouteEntry>
  /** Handlers by `group.endpoint`. */
  readonly handlers: ReadonlyMap<string, FastHandler>
  readonly maxBodyBytes: number
  readonly traffic: Traffic
  readonly logsRequests: boolean
  readonly runtime: Runtime.Runtime<R>
}

export const makeFastListener =
  <R>(options: FastLaneOptions<R>): FastListener =>
  (request, response) => {
    if (options.traffic.draining || request.method !== "POST") return false
    const url = request.url ?? ""
    const route = findRoute(options.routes, "POST", url)
    const handler = route === undefined ? undefined : options.handlers.get(`${route.group}.${route.endpoint}`)
    if (route === undefined || handler === undefined) return false
    const length = Number(request.headers["content-length"])
    const type = (request.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase()
    const ordinary =
      length > 0 &&
      length <= (route.maxBodyBytes ?? options.maxBodyBytes) &&
      request.headers["transfer-encoding"] === undefined &&
      isJsonType(type) &&
      !/%00/i.test(url)
    if (!ordinary) return false

    const started = performance.now()
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
    const matched: RouteEntry = route
    /** Offers the request to the direct handler; true when it took it. */
    const takenDirectly = (direct: DirectHandler, text: string) => {
      const json = storableJson(text)
      if (json === undefined) return false
      const fast: FastRequest = {
        route: matched,
        requestId,
        params: pathParams(matched, url),
        method: "POST",
        headers: Headers.fromInput(request.headers),
        text,
        body: json.value
      }
      const answered = (status: number) => {
        const elapsed = performance.now() - started
        recordRequestNow("POST", matched.template, status, elapsed / 1000)
        if (options.logsRequests) {
          Runtime.runFork(options.runtime)(
            Effect.logInfo("request").pipe(
              Effect.annotateLogs({
                request_id: requestId,
                route: matched.template,
                method: "POST",
                status,
                duration_ms: Math.round(elapsed * 100) / 100
              })
            )
          )
        }
      }
      let taken: boolean
      try {
        taken = direct(fast, response, answered)
      } catch (defect) {
        // A direct handler throws only before it acts: the Effect path answers (and fails closed) instead.
        Runtime.runFork(options.runtime)(Effect.logError("direct handler failed; request left to the pipeline", defect))
        taken = false
      }
      if (!taken) return false
      recordDirectRequest(matched.template)
      response.once("close", leave)
      return true
    }
    request.once("end", () => {
      const text = Buffer.concat(chunks).toString("utf8")
      if (handler.direct !== undefined && takenDirectly(handler.direct, text)) return
      const answer = (scope: Scope.Scope) =>
        Scope.extend(
          Effect.flatMap(parseBody(text), (body) =>
            handler({
              route,
              requestId,
              params: pathParams(route, url),
              method: "POST",
              headers: Headers.fromInput(request.headers),
              text,
              body
            })
          ),
          scope
        )
      const respond = (scope: Scope.Scope) =>
        Effect.gen(function* () {
          const reply = yield* replyOf(yield* Effect.exit(answer(scope)), requestId)
          let status: number
          if ("response" in reply) {
            status = reply.response.status
            writePlatformResponse(response, reply.response, requestId)
          } else {
            status = reply.status
            writeJson(response, reply, requestId)
          }
          const elapsed = performance.now() - started
          yield* recordRequest("POST", route.template, status, elapsed / 1000)
          if (options.logsRequests) {
            yield* Effect.logInfo("request").pipe(
              Effect.annotateLogs({ method: "POST", status, duration_ms: Math.round(elapsed * 100) / 100 })
            )
          }
          // The request's scope stays open while a streamed answer is still going out.
          yield* untilClosed(response)
        })
      // The request's scope closes when the answer is out or the client left: its finalizers (the gateway's usage
      // record) run then.
      const program = Effect.acquireUseRelease(Scope.make(), respond, (scope, exit) => Scope.close(scope, exit)).pipe(
        Effect.ensuring(Effect.sync(leave)),
        Effect.annotateLogs({ request_id: requestId, route: route.template })
      )
      const fiber = Runtime.runFork(options.runtime)(program)
      // A client gone before its answer interrupts the handler, as the platform's server does.
      response.once("close", () => {
        if (!response.headersSent) Runtime.runFork(options.runtime)(Fiber.interrupt(fiber))
      })
    })
    return true
  }
