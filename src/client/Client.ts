/**
 * The typed client of the whole contract (`GuardrailApi`): one method per
 * endpoint, `client.<group>.<endpoint>({ path, urlParams, payload, headers })`,
 * with the contract's schemas encoding requests and decoding answers. An
 * error answer fails with the error class of its status (`NotFound`,
 * `BadRequest`, ...; see src/http/Errors.ts), carrying `code`, `message` and
 * `details`. Path values are percent-encoded (a model name may hold `/`); empty ones, `.` and `..`, which
 * would name another endpoint, are refused.
 * Published as `guardrail-service/client` with a Promise facade (Facade.ts).
 */
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiClient from "@effect/platform/HttpApiClient"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { Effect, FiberRef, Option, ParseResult, Schema } from "effect"
import { GuardrailApi } from "../Api.js"
import { IDEMPOTENCY_HEADER } from "../idempotency/Domain.js"
import { type RetryOptions, retrying } from "./Retry.js"

export type { RetryOptions } from "./Retry.js"

export interface ClientOptions {
  /** The service's base URL, e.g. `http://127.0.0.1:8080`. */
  readonly baseUrl: string
  /** A session JWT, a runtime key or the internal key, sent as `Authorization: Bearer`. */
  readonly token?: string | undefined
  /** Headers sent with every request (e.g. `x-service-workspace-id`). */
  readonly headers?: Readonly<Record<string, string>> | undefined
  /** Retries of 429 and 503 answers (honouring `Retry-After`); `false`: none. Default: 3 retries. */
  readonly retry?: RetryOptions | false | undefined
  /**
   * Sends an `Idempotency-Key` with every decision and run-event append that has none (default true), so
   * a retry is answered the first result instead of writing twice.
   */
  readonly idempotencyKeys?: boolean | undefined
}

/** The `Idempotency-Key` of the requests made in its scope (`withIdempotencyKey`); unset: a fresh one per request. */
export const CurrentIdempotencyKey = FiberRef.unsafeMake<string | undefined>(undefined)

/** Runs `effect` (a decision or run-event append) with this `Idempotency-Key`, e.g. one kept across a restart. */
export const withIdempotencyKey =
  (key: string) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    Effect.locally(effect, CurrentIdempotencyKey, key)

/** The endpoints that take an `Idempotency-Key`: `POST /v1/events` and `POST /v1/runs/{id}/events`. */
const IDEMPOTENT = /^\/v1\/(events|runs\/[^/]+\/events)$/

const withIdempotencyKeyHeader = (request: HttpClientRequest.HttpClientRequest) =>
  request.method !== "POST" || request.headers[IDEMPOTENCY_HEADER] !== undefined || !IDEMPOTENT.test(request.url)
    ? Effect.succeed(request)
    : Effect.map(FiberRef.get(CurrentIdempotencyKey), (key) =>
        HttpClientRequest.setHeader(request, IDEMPOTENCY_HEADER, key ?? crypto.randomUUID())
      )

const withCredentials = (options: ClientOptions) => (request: HttpClientRequest.HttpClientRequest) => {
  const authorized = options.token === undefined ? request : HttpClientRequest.bearerToken(request, options.token)
  return options.headers === undefined ? authorized : HttpClientRequest.setHeaders(authorized, options.headers)
}

const transformClient = (options: ClientOptions) => (client: HttpClient.HttpClient) => {
  const credentialed = HttpClient.mapRequest(client, withCredentials(options))
  const keyed =
    options.idempotencyKeys === false
      ? credentialed
      : HttpClient.mapRequestEffect(credentialed, withIdempotencyKeyHeader)
  return options.retry === false ? keyed : retrying(keyed, options.retry ?? {})
}

/** One endpoint's path template (`/v1/runs/:id`) and its path schema's encoder. */
interface Route {
  readonly template: string
  readonly encodePath: (path: unknown) => Option.Option<unknown>
}

/** Every endpoint's route, by group and endpoint name as the reflected client names them (read once, when needed). */
let routes: ReadonlyMap<string, Route> | undefined
const routesOfApi = () => {
  if (routes !== undefined) return routes
  const found = new Map<string, Route>()
  HttpApi.reflect(GuardrailApi, {
    onGroup: () => {},
    onEndpoint: ({ endpoint, group }) => {
      found.set(`${group.topLevel ? "" : group.identifier}/${endpoint.name}`, {
        template: endpoint.path,
        encodePath: Option.match(endpoint.pathSchema, {
          onNone: () => Option.some,
          onSome: (schema) => Schema.encodeUnknownOption(schema)
        })
      })
    }
  })
  routes = found
  return found
}

/**
 * A path value sent as `.` or `..` would be resolved by the URL (even as `%2E`), and an empty one leaves an
 * empty segment (`GET /v1/runs/` is the runs list): each would call another endpoint.
 */
const unsendable = (segment: string) => segment === "" || segment === "." || segment === ".."

const refusedSegment = (name: string, value: string) =>
  new ParseResult.ParseError({
    issue: new ParseResult.Pointer(
      name,
      value,
      new ParseResult.Type(
        Schema.String.ast,
        value,
        "a path value cannot be empty, . or .. (the URL would name another endpoint)"
      )
    )
  })

/**
 * The URL of a request with its path values percent-encoded (a model name may hold `/`), filling the template
 * as HttpApiClient does. The endpoint itself checks the values as given, since the service's limits are on the
 * decoded values: a value near its limit that encodes longer is still sent. None when the values do not encode
 * (the endpoint then fails with its own ParseError).
 */
const encodedUrl = (route: Route, path: unknown): Effect.Effect<Option.Option<string>, ParseResult.ParseError> =>
  Option.match(route.encodePath(path), {
    onNone: () => Effect.succeed(Option.none()),
    onSome: (encoded) => {
      let refused: readonly [string, string] | undefined
      const url = route.template.replace(/:(\w+)\??/g, (_, name: string) => {
        const value: unknown = (encoded as Record<string, unknown>)[name]
        const segment = encodeURIComponent(typeof value === "string" ? value : String(value))
        if (unsendable(segment)) refused ??= [name, segment]
        return segment
      })
      return refused === undefined ? Effect.succeed(Option.some(url)) : Effect.fail(refusedSegment(...refused))
    }
  })

/** The HTTP client (base URL, credentials, retries) of the bound client an endpoint is called through. */
interface BoundCall {
  readonly http: HttpClient.HttpClient
  /** The request's URL with its path values percent-encoded (none when the endpoint has no path values). */
  readonly url: Option.Option<string>
}
const BoundCall = FiberRef.unsafeMake<BoundCall | undefined>(undefined)

/** Sends each request through the bound client of the call that made it, at its encoded URL. */
const throughBoundClient = (reflectedOver: HttpClient.HttpClient) =>
  HttpClient.transform(reflectedOver, (_unbound, request) =>
    Effect.flatMap(FiberRef.get(BoundCall), (bound) =>
      bound === undefined
        ? Effect.dieMessage("guardrail client: endpoint called outside its client")
        : bound.http.execute(
            Option.match(bound.url, { onNone: () => request, onSome: (url) => HttpClientRequest.setUrl(request, url) })
          )
    )
  )

const reflectApi = (http: HttpClient.HttpClient) =>
  HttpApiClient.make(GuardrailApi, { transformClient: throughBoundClient }).pipe(
    Effect.provideService(HttpClient.HttpClient, http)
  )

type ReflectedClient = Effect.Effect.Success<ReturnType<typeof reflectApi>>

/**
 * Reflecting the API (a schema per endpoint and response) costs ~150 ms of CPU, so it is done once per
 * underlying HTTP client; each `makeClient` only binds its options to the endpoint functions.
 */
const reflected = new WeakMap<HttpClient.HttpClient, ReflectedClient>()

/** Every endpoint function, with its path values encoded and its requests sent through `bound`. */
const bindTo = <C extends object>(client: C, bound: HttpClient.HttpClient): C => {
  const routes = routesOfApi()
  const bindEndpoint =
    (endpoint: (request: unknown) => Effect.Effect<unknown, unknown, unknown>, route: Route | undefined) =>
    (request: unknown) => {
      const path = typeof request === "object" && request !== null && "path" in request ? request.path : undefined
      return Effect.flatMap(
        route === undefined || path === undefined ? Effect.succeed(Option.none()) : encodedUrl(route, path),
        (url) => Effect.locally(endpoint(request), BoundCall, { http: bound, url })
      )
    }
  const bindGroup = (prefix: string, group: object) =>
    Object.fromEntries(
      Object.entries(group).map(([name, endpoint]) => [
        name,
        typeof endpoint === "function" ? bindEndpoint(endpoint, routes.get(`${prefix}/${name}`)) : endpoint
      ])
    )
  return Object.fromEntries(
    Object.entries(client).map(([name, group]) => [
      name,
      typeof group === "function"
        ? bindEndpoint(group, routes.get(`/${name}`))
        : typeof group === "object" && group !== null
          ? bindGroup(name, group)
          : group
    ])
  ) as C
}

/** The client over the platform's `HttpClient` in context. */
export const makeClient = (options: ClientOptions) =>
  Effect.gen(function* () {
    const http = yield* HttpClient.HttpClient
    let client = reflected.get(http)
    if (client === undefined) {
      client = yield* reflectApi(http)
      reflected.set(http, client)
    }
    // The base URL last, as HttpApiClient does: the idempotency rule matches the request's path.
    const bound = HttpClient.mapRequest(transformClient(options)(http), HttpClientRequest.prependUrl(options.baseUrl))
    return bindTo(client, bound)
  })

export type GuardrailClient = Effect.Effect.Success<ReturnType<typeof makeClient>>

/** One `fetch` client for every `guardrailClient`, so the API is reflected once (`fetch` itself is looked up per request). */
const fetchHttpClient = Effect.runSync(Effect.cached(Effect.provide(HttpClient.HttpClient, FetchHttpClient.layer)))

/** The client over `fetch`. */
export const guardrailClient = (options: ClientOptions): Effect.Effect<GuardrailClient> =>
  Effect.flatMap(fetchHttpClient, (http) =>
    makeClient(options).pipe(Effect.provideService(HttpClient.HttpClient, http))
  )
