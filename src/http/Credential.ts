/**
 * Where a request's credential is read: `Authorization: Bearer <token>`.
 * Anthropic SDK clients send their key as `x-api-key`: on the
 * messages-dialect gateway route it stands for the bearer token when no
 * Authorization header is sent, so `new Anthropic({ apiKey })` works
 * unchanged (docs/gateway.md).
 */
import * as Headers from "@effect/platform/Headers"
import type { RouteEntry } from "./Routes.js"

/** The headers to authenticate with: the messages dialect's `x-api-key` as the bearer token. */
export const withMessagesDialectKey = (headers: Headers.Headers, route: RouteEntry | undefined) => {
  const key = headers["x-api-key"]
  return route?.endpoint === "proxyMessages" && headers["authorization"] === undefined && key !== undefined
    ? Headers.set(headers, "authorization", `Bearer ${key}`)
    : headers
}

// HttpApiSecurity.bearer reads the Authorization header after this many characters ("Bearer "), unchecked.
const BEARER_PREFIX_LENGTH = "Bearer ".length

/** The bearer token of already-normalized headers, read as the platform's bearer security reads it. */
export const bearerTokenOf = (headers: Headers.Headers) => (headers["authorization"] ?? "").slice(BEARER_PREFIX_LENGTH)
