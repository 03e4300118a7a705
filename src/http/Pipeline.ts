/**
 * The request pipeline: the middleware around the HttpApi app for every
 * request the fast lane does not take. It
 * - finds the request's route once (Routes.ts) and provides it, with the
 *   request id, as `CurrentRequest`;
 * - answers 413/415/400 for bodies too large, of the wrong media type or
 *   malformed, before routing (Body.ts);
 * - turns decode failures and unknown routes into the conventions' error
 *   body, adds an error's headers (Retry-After), and maps any defect to a
 *   logged 500 with the request id, never a stack trace;
 * - stamps `x-request-id` and records the request (AccessLog.ts).
 */
import * as FileSystem from "@effect/platform/FileSystem"
import * as Headers from "@effect/platform/Headers"
import type * as HttpApiError from "@effect/platform/HttpApiError"
import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpIncomingMessage from "@effect/platform/HttpIncomingMessage"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as UrlParams from "@effect/platform/UrlParams"
import { RequestError, type RouteNotFound } from "@effect/platform/HttpServerError"
import { Cause, Effect, Either, FiberRef, LogLevel, Option, ParseResult, Predicate, Schema, Stream } from "effect"
import { Readable } from "node:stream"
import { countedRequest, type Traffic } from "../operations/Drain.js"
import { requestAnswered } from "./AccessLog.js"
import { isJsonType, mediaTypeOf, parseJsonBody, readNodeBody, tooLarge, YAML_TYPES } from "./Body.js"
import { withMessagesDialectKey } from "./Credential.js"
import {
  BadRequest,
  decodeReportingAll,
  errorBodyOf,
  type HttpError,
  errorHeadersOf,
  internalErrorBody,
  isHttpError,
  NotFound,
  statusOf,
  UnsupportedMediaType,
  validationFailed
} from "./Errors.js"
import type { ReportPermits } from "./ReportPermits.js"
import { CurrentRequest, requestIdOf } from "./RequestInfo.js"
import { findRoute, pathOf, pathParams, type RouteEntry } from "./Routes.js"
import { databaseAnswerOf, logProblem } from "./Writes.js"

const utf8 = new TextDecoder()

const hasBody = (request: HttpServerRequest.HttpServerRequest) => {
  const length = request.headers["content-length"]
  return request.headers["transfer-encoding"] !== undefined || (length !== undefined && length !== "0")
}

const isBodyLimitError = (error: unknown): boolean =>
  String(error).includes("maxBytes exceeded") ||
  (Predicate.hasProperty(error, "cause") && error.cause !== error && isBodyLimitError(error.cause))

/** The Node request under a request served by NodeHttpServer (undefined under other servers). */
const nodeSourceOf = (request: HttpServerRequest.HttpServerRequest): Readable | undefined => {
  const source: unknown = (request as { readonly source?: unknown }).source
  return source instanceof Readable ? source : undefined
}

/** The whole body within `limit` (Body.ts), from Node's stream or else the platform's. */
const readBody = (request: HttpServerRequest.HttpServerRequest, limit: number) => {
  const source = nodeSourceOf(request)
  if (source !== undefined) return readNodeBody(source, limit)
  return request.stream.pipe(
    Stream.runFoldEffect({ chunks: [] as Array<Uint8Array>, bytes: 0 }, (acc, chunk) => {
      const bytes = acc.bytes + chunk.length
      if (bytes > limit * 8) return Effect.fail(tooLarge(limit))
      if (bytes <= limit) acc.chunks.push(chunk)
      return Effect.succeed({ chunks: acc.chunks, bytes })
    }),
    Effect.mapError((error) =>
      isHttpError(error)
        ? error
        : new BadRequest({ code: "unreadable_body", message: "The request body could not be read." })
    ),
    Effect.flatMap(({ bytes, chunks }) =>
      bytes > limit ? Effect.fail(tooLarge(limit)) : Effect.succeed(Buffer.concat(chunks))
    )
  )
}

/** The request with its body already read: every body accessor answers from `bytes`. */
const withBody = (
  request: HttpServerRequest.HttpServerRequest,
  bytes: Uint8Array,
  headers: Headers.Headers,
  text: string,
  parsed?: { readonly value: unknown }
) => {
  const decodeError = (cause: unknown) => new RequestError({ request, reason: "Decode", cause })
  return Object.create(request, {
    headers: { value: headers },
    text: { value: Effect.succeed(text) },
    json: {
      get: () =>
        parsed !== undefined
          ? Effect.succeed(parsed.value)
          : Effect.try({ try: () => (text === "" ? null : (JSON.parse(text) as unknown)), catch: decodeError })
    },
    urlParamsBody: {
      get: () => Effect.try({ try: () => UrlParams.fromInput(new URLSearchParams(text)), catch: decodeError })
    },
    arrayBuffer: { get: () => Effect.succeed(Uint8Array.from(bytes).buffer) },
    stream: { get: () => Stream.succeed(bytes) }
  }) as HttpServerRequest.HttpServerRequest
}

const notAnObject = new BadRequest({
  code: "validation_failed",
  message: "body: must be a JSON object, not an array",
  details: [{ path: "", message: "must be a JSON object, not an array" }]
})

const unsupported = (accepted: string, type: string) =>
  new UnsupportedMediaType({
    code: "unsupported_media_type",
    message: `Send this endpoint's body as ${accepted} (got ${type === "" ? "no Content-Type" : type}).`
  })

/** Checks the body against the route; answers the request to hand on (YAML endpoints see JSON text as YAML). */
const checkBody = (request: HttpServerRequest.HttpServerRequest, route: RouteEntry | undefined, limit: number) =>
  Effect.gen(function* () {
    // Without a body and without a Content-Type there is nothing to check; a Content-Type is checked
    // even on an empty body (a body-less multipart request would otherwise die in the multipart parser).
    if (!hasBody(request) && request.headers["content-type"] === undefined) return request
    if (Number(request.headers["content-length"] ?? 0) > limit) return yield* tooLarge(limit)
    if (route === undefined || route.body === "none" || route.body === "other") return request
    const type = mediaTypeOf(request.headers["content-type"])
    if (route.body === "json" && !isJsonType(type)) return yield* unsupported("application/json", type)
    if (route.body === "yaml" && !YAML_TYPES.includes(type)) {
      return yield* unsupported("application/yaml or application/json", type)
    }
    const bytes = yield* readBody(request, limit)
    const text = utf8.decode(bytes)
    if (route.body === "yaml") {
      return withBody(request, bytes, Headers.set(request.headers, "content-type", "application/yaml"), text)
    }
    // Handed on as application/json (HttpApi only decodes JSON when the content type contains "application/json"),
    // with a body that answers from what was read and parsed.
    const jsonHeaders = Headers.set(request.headers, "content-type", "application/json")
    if (text.trim() === "") return withBody(request, bytes, jsonHeaders, text)
    const value = yield* Either.match(parseJsonBody(text), { onLeft: Effect.fail, onRight: Effect.succeed })
    if (route.objectBody && Array.isArray(value)) return yield* notAnObject
    return withBody(request, bytes, jsonHeaders, text, { value })
  })

const routeNotFound = (error: RouteNotFound) =>
  new NotFound({
    code: "route_not_found",
    message: `No route for ${error.request.method} ${pathOf(error.request.url)}.`
  })

/** The query string as HttpApi decodes it: one value a string, a repeated name an array. */
const searchRecord = (url: string) => {
  const params = new URL(url, "http://localhost").searchParams
  const record: Record<string, string | Array<string>> = {}
  for (const name of new Set(params.keys())) {
    const values = params.getAll(name)
    record[name] = values.length === 1 ? values[0]! : values
  }
  return record
}

type Issue = { readonly path: ReadonlyArray<PropertyKey>; readonly message: string }

const issuesOf = (schema: Schema.Schema.AnyNoContext | undefined, input: unknown) =>
  schema === undefined
    ? Effect.succeed<ReadonlyArray<Issue>>([])
    : decodeReportingAll(schema)(input).pipe(
        Effect.as<ReadonlyArray<Issue>>([]),
        Effect.catchAll((error) => Effect.succeed(ParseResult.ArrayFormatter.formatErrorSync(error)))
      )

/**
 * The 400 for a request HttpApi refused. HttpApi stops at the first failing part (path, then query string,
 * then body) and at its first failing path; the path parameters, query string and body are decoded again reporting every failing
 * path (as the fast lane does), so one answer lists them all.
 */
const everyIssue = (
  route: RouteEntry | undefined,
  request: HttpServerRequest.HttpServerRequest,
  error: HttpApiError.HttpApiDecodeError
) =>
  Effect.gen(function* () {
    if (route === undefined) return validationFailed(error.issues, error.message)
    const body =
      route.payloadSchema === undefined
        ? undefined
        : route.body === "json"
          ? yield* request.json
          : route.body === "yaml"
            ? yield* request.text
            : undefined
    const issues = [
      ...(yield* issuesOf(route.pathSchema, pathParams(route, request.url))),
      ...(yield* issuesOf(route.urlParamsSchema, searchRecord(request.url))),
      ...(body === undefined ? [] : yield* issuesOf(route.payloadSchema, body))
    ]
    return issues.length === 0 ? validationFailed(error.issues, error.message) : validationFailed(issues)
  }).pipe(Effect.orElseSucceed(() => validationFailed(error.issues, error.message)))

/** Body checks before routing, error-shape mapping after, for the request's route. */
const requestGuard =
  (route: RouteEntry | undefined, maxBodyBytes: number) =>
  <E, R>(app: HttpApp.Default<E, R>) =>
    Effect.gen(function* () {
      const original = yield* HttpServerRequest.HttpServerRequest
      const headers = withMessagesDialectKey(original.headers, route)
      const request = headers === original.headers ? original : original.modify({ headers })
      if (/%00/i.test(request.url)) {
        return yield* new BadRequest({ code: "validation_failed", message: "The URL contains a NUL character (%00)." })
      }
      const limit = route?.maxBodyBytes ?? maxBodyBytes
      const checked = yield* checkBody(request, route, limit)
      const inner =
        checked === original ? app : Effect.provideService(app, HttpServerRequest.HttpServerRequest, checked)
      return yield* inner.pipe(
        HttpIncomingMessage.withMaxBodySize(Option.some(FileSystem.Size(limit))),
        Effect.catchIf(
          (error): error is E & HttpApiError.HttpApiDecodeError => Predicate.isTagged(error, "HttpApiDecodeError"),
          (error) => Effect.flatMap(everyIssue(route, checked, error), Effect.fail)
        )
      )
    }).pipe(
      Effect.catchAllCause((cause): Effect.Effect<never, HttpError | E> => {
        const failure = Cause.failureOption(cause)
        if (Option.isSome(failure)) {
          const error: unknown = failure.value
          if (Predicate.isTagged(error, "RouteNotFound")) return Effect.fail(routeNotFound(error as RouteNotFound))
        }
        return Effect.failCause(cause)
      })
    )

const errorAnswer = (status: number, body: unknown, headers: Readonly<Record<string, string>> = {}) =>
  HttpServerResponse.unsafeJson(body, { status, headers })

/** Maps a cause that escaped the API's error encoding to a response. */
const defectResponse = (cause: Cause.Cause<unknown>, requestId: string, maxBodyBytes: number) => {
  const error = Cause.squash(cause)
  if (isBodyLimitError(error)) {
    const refusal = tooLarge(maxBodyBytes)
    return Effect.succeed(errorAnswer(statusOf(refusal), errorBodyOf(refusal)))
  }
  if (Predicate.isTagged(error, "RequestError")) {
    const refusal = new BadRequest({
      code: "unreadable_body",
      message: "The request body could not be read or parsed."
    })
    return Effect.succeed(errorAnswer(statusOf(refusal), errorBodyOf(refusal)))
  }
  const database = databaseAnswerOf(error, cause)
  if (database !== undefined) {
    return logProblem(database.problem).pipe(
      Effect.as(errorAnswer(statusOf(database.error), errorBodyOf(database.error), errorHeadersOf(database.error)))
    )
  }
  return Effect.logError("unhandled failure", cause).pipe(Effect.as(errorAnswer(500, internalErrorBody(requestId))))
}

/** The HTTP error's own headers (Retry-After): its body is encoded by HttpApi, after this middleware. */
const withErrorHeaders = (error: unknown) => {
  const headers = isHttpError(error) ? errorHeadersOf(error) : {}
  return Object.keys(headers).length === 0
    ? Effect.void
    : HttpApp.appendPreResponseHandler((_, response) =>
        Effect.succeed(HttpServerResponse.setHeaders(response, headers))
      )
}

/**
 * The API-level middleware. It runs inside the HttpApi app, before the
 * response is written, so the pre-response handler sees every final response
 * (encoded errors included).
 */
export const requestPipeline =
  (routes: ReadonlyArray<RouteEntry>, maxBodyBytes: number, traffic?: Traffic, reports?: ReportPermits) =>
  <E, R>(app: HttpApp.Default<E, R>) =>
    Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      const requestId = requestIdOf(request.headers["x-request-id"])
      const startedAt = performance.now()
      const route = findRoute(routes, request.method, request.url)
      // The access log line is skipped outright when LOG_LEVEL filters info out (no annotation work per request).
      const logs = LogLevel.greaterThanEqual(LogLevel.Info, yield* FiberRef.get(FiberRef.currentMinimumLogLevel))
      yield* HttpApp.appendPreResponseHandler((_, response) =>
        Effect.as(
          requestAnswered(
            {
              requestId,
              method: request.method,
              template: route?.template,
              path: pathOf(request.url),
              status: response.status,
              startedAt
            },
            logs
          ),
          HttpServerResponse.setHeader(response, "x-request-id", requestId)
        )
      )
      if (traffic?.draining === true) {
        return HttpServerResponse.unsafeJson(
          {
            error: {
              code: "shutting_down",
              message: "The service is shutting down; retry on another instance.",
              request_id: requestId
            }
          },
          { status: 503, headers: { connection: "close", "retry-after": "1" } }
        )
      }
      // A report waits for its workspace's permit, then the process's (while its client stays connected), so reports
      // never hold every connection, nor one workspace every report permit. The credential middleware admits the turn
      // once it knows the workspace (AuthenticationLive.ts); what the turn took is given back once answered.
      const reportTurn = route?.report === true && reports !== undefined ? reports.turn() : undefined
      const served = reportTurn === undefined ? app : Effect.ensuring(app, reportTurn.end)
      const guarded = requestGuard(
        route,
        maxBodyBytes
      )(served).pipe(
        Effect.tapError(withErrorHeaders),
        Effect.catchAllCause((cause) =>
          Cause.isInterruptedOnly(cause) || Option.exists(Cause.failureOption(cause), isHttpError)
            ? Effect.failCause(cause)
            : defectResponse(cause, requestId, maxBodyBytes)
        ),
        Effect.provideService(CurrentRequest, { requestId, route, startedAt, reportTurn }),
        Effect.annotateLogs({ request_id: requestId, route: route?.template ?? pathOf(request.url) })
      )
      return yield* traffic === undefined ? guarded : countedRequest(traffic, guarded)
    })
