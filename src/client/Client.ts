/**
 * The typed client of the whole contract (`GuardrailApi`): one method per
 * endpoint, `client.<group>.<endpoint>({ path, urlParams, payload, headers })`,
 * with the contract's schemas encoding requests and decoding answers. An
 * error answer fails with the error class of its status (`NotFound`,
 * `BadRequest`, ...; see src/http/Errors.ts), carrying `code`, `message` and
 * `details`. The tests speak to the service through it, and the typed-client
 * issue publishes it with a Promise facade.
 */
import { FetchHttpClient, HttpApiClient, HttpClient, HttpClientRequest } from "@effect/platform"
import { Effect } from "effect"
import { GuardrailApi } from "../Api.js"

export interface ClientOptions {
  /** The service's base URL, e.g. `http://127.0.0.1:8080`. */
  readonly baseUrl: string
  /** A session JWT, a runtime key or the internal key, sent as `Authorization: Bearer`. */
  readonly token?: string | undefined
  /** Headers sent with every request (e.g. `x-service-workspace-id`). */
  readonly headers?: Readonly<Record<string, string>> | undefined
}

const withCredentials = (options: ClientOptions) => (request: HttpClientRequest.HttpClientRequest) => {
  const authorized = options.token === undefined ? request : HttpClientRequest.bearerToken(request, options.token)
  return options.headers === undefined ? authorized : HttpClientRequest.setHeaders(authorized, options.headers)
}

/** The client over the platform's `HttpClient` in context. */
export const makeClient = (options: ClientOptions) =>
  HttpApiClient.make(GuardrailApi, {
    baseUrl: options.baseUrl,
    transformClient: HttpClient.mapRequest(withCredentials(options))
  })

export type GuardrailClient = Effect.Effect.Success<ReturnType<typeof makeClient>>

/** The client over `fetch`. */
export const guardrailClient = (options: ClientOptions): Effect.Effect<GuardrailClient> =>
  makeClient(options).pipe(Effect.provide(FetchHttpClient.layer))
