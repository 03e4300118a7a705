/**
 * Request plumbing around the HttpApi:
 * - `makeRouteTable` derives, from the contract itself, each endpoint's
 *   method, path template and accepted body media type;
 * - `requestGuard` (inside the pipeline) answers 413/415/400 for bodies that
 *   are too large, of the wrong type or malformed, and turns decode failures
 *   and unknown routes into the conventions' error body;
 * - `requestContext` (server-level middleware) stamps `x-request-id`, writes
 *   one JSON access-log line per request and maps any defect to a logged 500
 *   with the request id, never a stack trace.
 */
import {
  FileSystem,
  Headers,
  HttpApi,
  type HttpApiError,
  HttpApiSchema,
  HttpApp,
  HttpIncomingMessage,
  HttpServerRequest,
  HttpServerResponse
} from "@effect/platform"
import { RequestError, type RouteNotFound } from "@effect/platform/HttpServerError"
import { UrlParams } from "@effect/platform"
import { Cause, Context, Effect, FiberRef, LogLevel, Option, Predicate, Stream } from "effect"
import { Readable } from "node:stream"
import { countedRequest, type Traffic } from "../operations/Drain.js"
import { recordRequest } from "../operations/Metrics.js"
import { uuidv7 } from "../platform/Ids.js"
import { shortMessage } from "../platform/Schemas.js"
import { clientFaultOf } from "../platform/Sql.js"
import { unstorableJson } from "../platform/Json.js"
import { BadRequest, errorHeadersOf, isHttpError, NotFound, PayloadTooLarge, UnsupportedMediaType } from "./Errors.js"

type BodyKind = "none" | "json" | "yaml" | "other"

const utf8 = new TextDecoder()

/** Endpoint annotation: the endpoint's own body limit instead of MAX_BODY_BYTES (file uploads above it, YAML documents below). */
export class MaxBodyBytes extends Context.Tag("platform/MaxBodyBytes")<MaxBodyBytes, number>() {}

export interface RouteEntry {
  /** Body limit of this endpoint, when it has its own. */
  readonly maxBodyBytes: number | undefined
  readonly group: string
  readonly endpoint: string
  readonly method: string
  readonly template: string
  readonly pattern: RegExp
  readonly body: BodyKind
}

const YAML_TYPES = ["application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml", "application/json"]

const bodyKindOf = (endpoint: {
  readonly payloadSchema: Option.Option<{ readonly ast: Parameters<typeof HttpApiSchema.getEncoding>[0] }>
}): BodyKind => {
  if (Option.isNone(endpoint.payloadSchema)) return "none"
  const encoding = HttpApiSchema.getEncoding(endpoint.payloadSchema.value.ast)
  if (encoding.kind === "Json") return "json"
  return encoding.contentType.includes("yaml") ? "yaml" : "other"
}

export const makeRouteTable = (api: HttpApi.HttpApi.Any): ReadonlyArray<RouteEntry> => {
  const routes: Array<RouteEntry> = []
  HttpApi.reflect(api as HttpApi.HttpApi.AnyWithProps, {
    onGroup: () => {},
    onEndpoint: ({ endpoint, group }) => {
      const body = endpoint.method === "GET" || endpoint.method === "HEAD" ? "none" : bodyKindOf(endpoint)
      const source = endpoint.path.replace(/[.*+?^${}()|[\]\\]/g, "\\$&").replace(/:[A-Za-z_][A-Za-z0-9_]*/g, "[^/]+")
      routes.push({
        maxBodyBytes: Context.getOption(endpoint.annotations, MaxBodyBytes).pipe(Option.getOrUndefined),
        group: group.identifier,
        endpoint: endpoint.name,
        method: endpoint.method,
        template: endpoint.path,
        pattern: new RegExp(`^${source}/?$`),
        body
      })
    }
  })
  // Static segments win over parameters, as in the router.
  return routes.sort((a, b) => (a.template.match(/:/g)?.length ?? 0) - (b.template.match(/:/g)?.length ?? 0))
}

const pathOf = (url: string) => {
  const query = url.indexOf("?")
  return query === -1 ? url : url.slice(0, query)
}

// Routes without parameters by "METHOD /path": most requests are found here without a regex scan.
const staticRoutes = new WeakMap<ReadonlyArray<RouteEntry>, ReadonlyMap<string, RouteEntry>>()

const staticRoutesOf = (routes: ReadonlyArray<RouteEntry>) => {
  let found = staticRoutes.get(routes)
  if (found === undefined) {
    const byPath = new Map<string, RouteEntry>()
    for (const route of routes) {
      const key = `${route.method} ${route.template}`
      if (!route.template.includes(":") && !byPath.has(key)) byPath.set(key, route)
    }
    found = byPath
    staticRoutes.set(routes, found)
  }
  return found
}

export const findRoute = (routes: ReadonlyArray<RouteEntry>, method: string, url: string) => {
  const path = pathOf(url)
  return (
    staticRoutesOf(routes).get(`${method} ${path}`) ??
    routes.find((route) => route.method === method && route.pattern.test(path))
  )
}

const hasBody = (request: HttpServerRequest.HttpServerRequest) => {
  const length = request.headers["content-length"]
  return request.headers["transfer-encoding"] !== undefined || (length !== undefined && length !== "0")
}

const mediaType = (request: HttpServerRequest.HttpServerRequest) =>
  (request.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase()

export const isJsonType = (type: string) => type === "application/json" || type.endsWith("+json")

const tooLarge = (limit: number) =>
  new PayloadTooLarge({ code: "payload_too_large", message: `The request body exceeds the ${limit}-byte limit.` })

const isBodyLimitError = (error: unknown): boolean =>
  String(error).includes("maxBytes exceeded") ||
  (Predicate.hasProperty(error, "cause") && error.cause !== error && isBodyLimitError(error.cause))

/**
 * Reads the whole body. Past the limit the rest is drained and dropped (so the
 * client, still sending, can read the 413); past 8x the limit the connection is
 * given up.
 */
const readBody = (request: HttpServerRequest.HttpServerRequest, limit: number) => {
  const source = nodeSourceOf(request)
  return source === undefined ? readBodyStream(request, limit) : readNodeBody(source, limit)
}

/** The Node request under a request served by NodeHttpServer (undefined under other servers). */
const nodeSourceOf = (request: HttpServerRequest.HttpServerRequest): Readable | undefined => {
  const source: unknown = (request as { readonly source?: unknown }).source
  return source instanceof Readable ? source : undefined
}

/** `readBody` on Node's stream with plain listeners: the same limits and errors, without Stream's per-request cost. */
const readNodeBody = (source: Readable, limit: number) =>
  Effect.async<Buffer, BadRequest | PayloadTooLarge>((resume) => {
    const chunks: Array<Buffer> = []
    let bytes = 0
    const stop = () => {
      source.off("data", onData)
      source.off("end", onEnd)
      source.off("error", onError)
    }
    const onData = (chunk: Buffer) => {
      bytes += chunk.length
      if (bytes > limit * 8) {
        stop()
        source.destroy()
        resume(Effect.fail(tooLarge(limit)))
      } else if (bytes <= limit) chunks.push(chunk)
    }
    const onEnd = () => {
      stop()
      resume(bytes > limit ? Effect.fail(tooLarge(limit)) : Effect.succeed(Buffer.concat(chunks, bytes)))
    }
    const onError = () => {
      stop()
      resume(Effect.fail(new BadRequest({ code: "unreadable_body", message: "The request body could not be read." })))
    }
    source.on("data", onData)
    source.once("end", onEnd)
    source.once("error", onError)
    return Effect.sync(() => {
      stop()
      source.destroy()
    })
  })

const readBodyStream = (request: HttpServerRequest.HttpServerRequest, limit: number) =>
  request.stream.pipe(
    Stream.runFoldEffect({ chunks: [] as Array<Uint8Array>, bytes: 0 }, (acc, chunk) => {
      const bytes = acc.bytes + chunk.length
      if (bytes > limit * 8) return Effect.fail(tooLarge(limit))
      if (bytes > limit) return Effect.succeed({ chunks: [], bytes })
      acc.chunks.push(chunk)
      return Effect.succeed({ chunks: acc.chunks, bytes })
    }),
    Effect.mapError((error) =>
      error instanceof PayloadTooLarge
        ? error
        : new BadRequest({ code: "unreadable_body", message: "The request body could not be read." })
    ),
    Effect.flatMap(({ bytes, chunks }) =>
      bytes > limit ? Effect.fail(tooLarge(limit)) : Effect.succeed(Buffer.concat(chunks))
    )
  )

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

/** Checks the body against the route; answers the request to hand on (YAML endpoints see JSON text as YAML). */
const checkBody = (request: HttpServerRequest.HttpServerRequest, route: RouteEntry | undefined, limit: number) =>
  Effect.gen(function* () {
    // Without a body and without a Content-Type there is nothing to check; a Content-Type is checked
    // even on an empty body (a body-less multipart request would otherwise die in the multipart parser).
    if (!hasBody(request) && request.headers["content-type"] === undefined) return request
    if (Number(request.headers["content-length"] ?? 0) > limit) return yield* tooLarge(limit)
    if (route === undefined || route.body === "none" || route.body === "other") return request
    const type = mediaType(request)
    if (route.body === "json" && !isJsonType(type)) {
      return yield* new UnsupportedMediaType({
        code: "unsupported_media_type",
        message: `Send this endpoint's body as application/json (got ${type === "" ? "no Content-Type" : type}).`
      })
    }
    if (route.body === "yaml" && !YAML_TYPES.includes(type)) {
      return yield* new UnsupportedMediaType({
        code: "unsupported_media_type",
        message: `Send this endpoint's body as application/yaml or application/json (got ${type === "" ? "no Content-Type" : type}).`
      })
    }
    const bytes = yield* readBody(request, limit)
    const text = utf8.decode(bytes)
    if (route.body === "yaml") {
      return withBody(request, bytes, Headers.set(request.headers, "content-type", "application/yaml"), text)
    }
    const jsonHeaders = Headers.set(request.headers, "content-type", "application/json")
    if (text.trim() === "") return withBody(request, bytes, jsonHeaders, text)
    {
      const value = yield* Effect.try({
        try: () => JSON.parse(text) as unknown,
        catch: (error) =>
          new BadRequest({
            code: "malformed_json",
            message: `The request body is not valid JSON: ${error instanceof Error ? error.message : String(error)}.`
          })
      })
      const problem = unstorableJson(value)
      if (problem !== undefined) {
        return yield* new BadRequest({
          code: "validation_failed",
          message: `${problem.path === "" ? "body" : problem.path}: ${problem.message}`,
          details: [problem]
        })
      }
      // Hand on a request whose body answers from what was read (and parsed), as application/json
      // (HttpApi only decodes JSON when the content type contains "application/json").
      return withBody(request, bytes, jsonHeaders, text, { value })
    }
  })

const formatPath = (path: ReadonlyArray<PropertyKey>) => path.map(String).join(".")

export const validationFailed = (error: HttpApiError.HttpApiDecodeError) => {
  const details = error.issues.map((issue) => ({ path: formatPath(issue.path), message: shortMessage(issue.message) }))
  const first = details[0]
  return new BadRequest({
    code: "validation_failed",
    message: first === undefined ? error.message : `${first.path === "" ? "body" : first.path}: ${first.message}`,
    details
  })
}

/**
 * Anthropic SDK clients send their key as `x-api-key`. On the messages-dialect
 * gateway route it stands for `Authorization: Bearer <key>` when that header is
 * absent, so `new Anthropic({ apiKey })` works unchanged (docs/gateway.md).
 * Answers the headers to authenticate with (the pipeline's and the fast lane's).
 */
export const withMessagesDialectKey = (headers: Headers.Headers, route: RouteEntry | undefined) => {
  const key = headers["x-api-key"]
  return route?.endpoint === "proxyMessages" && headers["authorization"] === undefined && key !== undefined
    ? Headers.set(headers, "authorization", `Bearer ${key}`)
    : headers
}

/** Body checks before routing, error-shape mapping after, for the request's route (found once per request). */
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
      return yield* inner.pipe(HttpIncomingMessage.withMaxBodySize(Option.some(FileSystem.Size(limit))))
    }).pipe(
      Effect.catchAllCause(
        (cause): Effect.Effect<never, BadRequest | NotFound | PayloadTooLarge | UnsupportedMediaType | E> => {
          const failure = Cause.failureOption(cause)
          if (Option.isSome(failure)) {
            const error: unknown = failure.value
            if (Predicate.isTagged(error, "HttpApiDecodeError")) {
              return Effect.fail(validationFailed(error as HttpApiError.HttpApiDecodeError))
            }
            if (Predicate.isTagged(error, "RouteNotFound")) {
              return Effect.fail(routeNotFound(error as RouteNotFound))
            }
          }
          return Effect.failCause(cause)
        }
      )
    )

const routeNotFound = (error: RouteNotFound) =>
  new NotFound({
    code: "route_not_found",
    message: `No route for ${error.request.method} ${pathOf(error.request.url)}.`
  })

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

/** The caller's `x-request-id` when it is a sane token, else a fresh one. */
export const requestIdOf = (incoming: string | ReadonlyArray<string> | undefined) =>
  typeof incoming === "string" && REQUEST_ID.test(incoming) ? incoming : `req_${uuidv7().replaceAll("-", "")}`

export const errorResponse = (status: number, code: string, message: string, requestId: string) =>
  HttpServerResponse.unsafeJson({ error: { code, message, request_id: requestId } }, { status })

/** Maps a cause that escaped the API's error encoding to a response. */
const defectResponse = (cause: Cause.Cause<unknown>, requestId: string, maxBodyBytes: number) => {
  const error = Cause.squash(cause)
  if (isBodyLimitError(error)) {
    return Effect.succeed(
      errorResponse(413, "payload_too_large", `The request body exceeds the ${maxBodyBytes}-byte limit.`, requestId)
    )
  }
  if (typeof error === "object" && error !== null && (error as { _tag?: unknown })._tag === "RequestError") {
    return Effect.succeed(
      errorResponse(400, "unreadable_body", "The request body could not be read or parsed.", requestId)
    )
  }
  const clientFault = clientFaultOf(error)
  if (clientFault !== undefined) {
    return Effect.logWarning("database refused a client's value", cause).pipe(
      Effect.as(
        errorResponse(clientFault._tag === "Conflict" ? 409 : 400, clientFault.code, clientFault.message, requestId)
      )
    )
  }
  return Effect.logError("unhandled failure", cause).pipe(
    Effect.as(
      errorResponse(
        500,
        "internal_error",
        `An internal error occurred; quote request id ${requestId} when reporting it.`,
        requestId
      )
    )
  )
}

/**
 * The API-level middleware: request id, access log, body checks, error-shape
 * mapping and the last-resort 500. It runs inside the HttpApi app, before the
 * response is written, so the pre-response handler sees every final response
 * (encoded errors included).
 */
export const requestPipeline = (routes: ReadonlyArray<RouteEntry>, maxBodyBytes: number, traffic?: Traffic) => {
  return <E, R>(app: HttpApp.Default<E, R>) =>
    Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      const requestId = requestIdOf(request.headers["x-request-id"])
      const started = performance.now()
      const entry = findRoute(routes, request.method, request.url)
      const route = entry?.template ?? pathOf(request.url)
      // The access log line is skipped outright when LOG_LEVEL filters info out (no annotation work per request).
      const logsRequests = LogLevel.greaterThanEqual(
        LogLevel.Info,
        yield* FiberRef.get(FiberRef.currentMinimumLogLevel)
      )
      yield* HttpApp.appendPreResponseHandler((_, response) => {
        const elapsed = performance.now() - started
        // Metrics label by route template only (unknown paths share one label: bounded cardinality).
        const measured = recordRequest(request.method, entry?.template ?? "unmatched", response.status, elapsed / 1000)
        const stamped = HttpServerResponse.setHeader(response, "x-request-id", requestId)
        if (!logsRequests) return Effect.as(measured, stamped)
        return Effect.logInfo("request").pipe(
          Effect.annotateLogs({
            request_id: requestId,
            method: request.method,
            route,
            status: response.status,
            duration_ms: Math.round(elapsed * 100) / 100
          }),
          Effect.zipRight(measured),
          Effect.as(stamped)
        )
      })
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
      const guarded = requestGuard(
        entry,
        maxBodyBytes
      )(app).pipe(
        // The error's body is encoded by HttpApi after this; its headers (Retry-After) are added here.
        Effect.tapError((error) => {
          const headers = isHttpError(error) ? errorHeadersOf(error) : {}
          return Object.keys(headers).length === 0
            ? Effect.void
            : HttpApp.appendPreResponseHandler((_, response) =>
                Effect.succeed(HttpServerResponse.setHeaders(response, headers))
              )
        }),
        Effect.catchAllCause((cause) =>
          Cause.isInterruptedOnly(cause) || Option.exists(Cause.failureOption(cause), isHttpError)
            ? Effect.failCause(cause)
            : defectResponse(cause, requestId, maxBodyBytes)
        ),
        Effect.annotateLogs({ request_id: requestId, route })
      )
      return yield* traffic === undefined ? guarded : countedRequest(traffic, guarded)
    })
}
