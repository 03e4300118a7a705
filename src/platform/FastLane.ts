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
import { createServer, IncomingMessage, ServerResponse } from "node:http"
import { Readable } from "node:stream"
import { enterRequest, leaveRequest, type Traffic } from "../operations/Drain.js"
import { recordRequest } from "../operations/Metrics.js"
import { BadRequest, isHttpError, type HttpError } from "./Errors.js"
import { findRoute, isJsonType, requestIdOf, type RouteEntry, validationFailed } from "./HttpPipeline.js"
import { unstorableJson } from "./Json.js"

/** What a lane endpoint gets: its route and path parameters, the request's headers and body (text and JSON). */
export interface FastRequest {
  readonly route: RouteEntry
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
export type FastHandler = (
  request: FastRequest
) => Effect.Effect<FastAnswer, HttpError | ParseResult.ParseError, Scope.Scope>

/** The lane's handlers by `group.endpoint` of the contract. */
export class FastLaneRoutes extends Context.Tag("platform/FastLaneRoutes")<
  FastLaneRoutes,
  ReadonlyMap<string, FastHandler>
>() {}

/** Offered every request first; answers true when it took the request. */
export type FastListener = (request: IncomingMessage, response: ServerResponse) => boolean

/** The server's hook, filled by the app once its services are up (empty: every request takes the pipeline). */
export class FastLane extends Context.Tag("platform/FastLane")<FastLane, { listener: FastListener | undefined }>() {}

/** A Node http server that offers each request to the lane before the Effect server's own listener. */
export const laneServer = (lane: Context.Tag.Service<FastLane>) => () => {
  const server = createServer()
  const emit: (event: string, ...args: Array<unknown>) => boolean = server.emit.bind(server)
  server.emit = (event: string, ...args: Array<unknown>) => {
    const [request, response] = args
    if (
      event === "request" &&
      lane.listener !== undefined &&
      request instanceof IncomingMessage &&
      response instanceof ServerResponse &&
      lane.listener(request, response)
    ) {
      return true
    }
    return emit(event, ...args)
  }
  return server
}

const statusOfTag: Readonly<Record<HttpError["_tag"], number>> = {
  BadRequest: 400,
  Unauthorized: 401,
  PaymentRequired: 402,
  Forbidden: 403,
  NotFound: 404,
  Conflict: 409,
  PayloadTooLarge: 413,
  UnsupportedMediaType: 415,
  Unprocessable: 422,
  TooManyRequests: 429,
  InternalError: 500,
  NotImplemented: 501,
  BadGateway: 502,
  ServiceUnavailable: 503,
  GatewayTimeout: 504
}

/** Writes a platform response: bytes, a Node stream piped with backpressure, or nothing. */
const writePlatformResponse = (
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
  else if (body._tag === "Raw" && body.body instanceof Readable) body.body.pipe(response)
  else response.end()
}

const errorReply = (error: HttpError): JsonAnswer => ({
  status: statusOfTag[error._tag],
  body: { error: { code: error.code, message: error.message, ...(error.details === undefined ? {} : { details: error.details }) } },
  ...(error._tag === "TooManyRequests" && error.retry_after_seconds !== undefined
    ? { headers: { "retry-after": String(error.retry_after_seconds) } }
    : {})
})

/** What to send for a handler's exit: its answer, its HTTP error, a 400 for a ParseError, else a logged 500. */
const replyOf = (exit: Exit.Exit<FastAnswer, HttpError | ParseResult.ParseError>, requestId: string) =>
  Effect.gen(function* () {
    if (Exit.isSuccess(exit)) return exit.value
    const failure = Cause.failureOption(exit.cause)
    if (Option.isSome(failure)) {
      const error = failure.value
      if (ParseResult.isParseError(error)) return errorReply(validationFailed(yield* HttpApiError.HttpApiDecodeError.fromParseError(error)))
      if (isHttpError(error)) return errorReply(error)
    }
    yield* Effect.logError("unhandled failure", exit.cause)
    return {
      status: 500,
      body: {
        error: {
          code: "internal_error",
          message: `An internal error occurred; quote request id ${requestId} when reporting it.`,
          request_id: requestId
        }
      }
    } satisfies JsonAnswer
  })

const malformed = (error: unknown) =>
  new BadRequest({
    code: "malformed_json",
    message: `The request body is not valid JSON: ${error instanceof Error ? error.message : String(error)}.`
  })

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
    request.once("end", () => {
      const text = Buffer.concat(chunks).toString("utf8")
      const program = Effect.gen(function* () {
        // Closed when the answer is out or the client left: finalizers (the gateway's usage record) run then.
        const scope = yield* Scope.make()
        response.once("close", () => Runtime.runFork(options.runtime)(Scope.close(scope, Exit.void)))
        const answer = Effect.flatMap(parseBody(text), (body) =>
          handler({ route, params: pathParams(route, url), method: "POST", headers: Headers.fromInput(request.headers), text, body })
        )
        const reply = yield* replyOf(yield* Effect.exit(Scope.extend(answer, scope)), requestId)
        let status: number
        if ("response" in reply) {
          status = reply.response.status
          writePlatformResponse(response, reply.response, requestId)
        } else {
          status = reply.status
          const json = JSON.stringify(reply.body)
          response.writeHead(status, {
            ...reply.headers,
            "content-type": "application/json",
            "content-length": Buffer.byteLength(json),
            "x-request-id": requestId
          })
          response.end(json)
        }
        const elapsed = performance.now() - started
        yield* recordRequest("POST", route.template, status, elapsed / 1000)
        if (options.logsRequests) {
          yield* Effect.logInfo("request").pipe(
            Effect.annotateLogs({ method: "POST", status, duration_ms: Math.round(elapsed * 100) / 100 })
          )
        }
      }).pipe(Effect.ensuring(Effect.sync(leave)), Effect.annotateLogs({ request_id: requestId, route: route.template }))
      const fiber = Runtime.runFork(options.runtime)(program)
      // A client gone before its answer interrupts the handler, as the platform's server does.
      response.once("close", () => {
        if (!response.headersSent) Runtime.runFork(options.runtime)(Fiber.interrupt(fiber))
      })
    })
    return true
  }
