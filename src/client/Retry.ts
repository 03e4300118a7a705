/**
 * The client's retries: a 429 or 503 answer is sent again after the time its
 * `Retry-After` header names (seconds or an HTTP date), else after an
 * exponential backoff; a request that never reached the service (connection
 * refused or reset) is sent again when repeating it is safe: a GET, or a
 * request with an `Idempotency-Key` (the service answers a repeat the first
 * result).
 */
import * as HttpClient from "@effect/platform/HttpClient"
import type * as HttpClientError from "@effect/platform/HttpClientError"
import type * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import type * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import { Duration, Effect } from "effect"
import { IDEMPOTENCY_HEADER } from "../idempotency/Domain.js"

export interface RetryOptions {
  /** Retries after the first attempt (default 3). */
  readonly retries?: number | undefined
  /** The first backoff when the answer names no `Retry-After`, doubled each retry (default 200 ms). */
  readonly baseDelayMillis?: number | undefined
  /** The longest wait between attempts, whatever `Retry-After` says (default 30 s). */
  readonly maxDelayMillis?: number | undefined
}

const RETRIED_STATUSES: ReadonlySet<number> = new Set([429, 503])

/** Milliseconds to wait by a `Retry-After` value, or undefined when it has none or is unreadable. */
export const retryAfterMillis = (value: string | undefined, now = Date.now()): number | undefined => {
  if (value === undefined || value.trim() === "") return undefined
  const seconds = Number(value)
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000)
  const date = Date.parse(value)
  return Number.isNaN(date) ? undefined : Math.max(0, date - now)
}

const safeToRepeat = (request: HttpClientRequest.HttpClientRequest) =>
  request.method === "GET" || request.headers[IDEMPOTENCY_HEADER] !== undefined

export const retrying = <E, R>(client: HttpClient.HttpClient.With<E, R>, options: RetryOptions) => {
  const retries = options.retries ?? 3
  const base = options.baseDelayMillis ?? 200
  const max = options.maxDelayMillis ?? 30_000
  const backoff = (attempt: number) => Math.min(max, base * 2 ** attempt)
  return HttpClient.transform(client, (send, request) => {
    const attempt = (n: number): Effect.Effect<HttpClientResponse.HttpClientResponse, E, R> =>
      send.pipe(
        Effect.flatMap((response) => {
          if (!RETRIED_STATUSES.has(response.status) || n >= retries) return Effect.succeed(response)
          const wait = Math.min(max, retryAfterMillis(response.headers["retry-after"]) ?? backoff(n))
          // The body is read (and dropped) so the connection is free for the next attempt.
          return response.arrayBuffer.pipe(
            Effect.ignore,
            Effect.zipRight(Effect.sleep(Duration.millis(wait))),
            Effect.zipRight(Effect.suspend(() => attempt(n + 1)))
          )
        }),
        Effect.catchIf(
          (error) => n < retries && safeToRepeat(request) && isTransportError(error),
          () => Effect.sleep(Duration.millis(backoff(n))).pipe(Effect.zipRight(Effect.suspend(() => attempt(n + 1))))
        )
      )
    return attempt(0)
  })
}

const isTransportError = (error: unknown): error is HttpClientError.RequestError =>
  typeof error === "object" &&
  error !== null &&
  "_tag" in error &&
  error._tag === "RequestError" &&
  "reason" in error &&
  error.reason === "Transport"
