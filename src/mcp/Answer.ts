/**
 * The client's answer for an MCP server's response: errors the gateway
 * answers itself (redirects, refused credentials, unreadable answers), and
 * otherwise the server's status, session id and messages, each message
 * through the request's screen (Relay.ts for SSE, whole for JSON).
 */
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Effect, Either, Exit } from "effect"
import type { UpstreamResponse } from "../gateway/Upstream.js"
import { MAX_JSON_BYTES } from "../gateway/UsageMeter.js"
import { errorBodyOf, type HttpError, statusOf } from "../http/Errors.js"
import { isScreenableObject, Limits } from "../platform/Schemas.js"
import { readWhole, relaySse, type RelayLimits, type RelayStop, type Verdict } from "./Relay.js"

/** What becomes of each message of the answer. */
export type Screen = (message: unknown) => Effect.Effect<Verdict>

/**
 * An end put to the answer from outside (its server deleted): `error` answers the client when nothing of
 * the answer went out yet, `reason` is the request's JSON-RPC error in an event stream under way.
 */
export interface AnswerStop extends RelayStop {
  readonly error: HttpError
}

/**
 * The client's answer for an upstream response, each message through `screen`; `release` once it is over;
 * `eventId` gives the id the client sees for each SSE event id of the server.
 */
export const respond = (
  upstream: UpstreamResponse,
  screen: Screen,
  ending: (reason: string) => unknown,
  release: () => void,
  limits: RelayLimits,
  runPromise: <A>(effect: Effect.Effect<A>) => Promise<A>,
  eventId?: (id: string) => string,
  stop?: AnswerStop
): Effect.Effect<HttpServerResponse.HttpServerResponse> => {
  // An event stream frees the slot when it ends; every other answer is over once it is built.
  let streamOwnsSlot = false
  return Effect.gen(function* () {
    const headers: Record<string, string> = {}
    const session = upstream.headers["mcp-session-id"]
    if (typeof session === "string") headers["mcp-session-id"] = session
    if (upstream.status >= 300 && upstream.status < 400) {
      upstream.abort()
      return HttpServerResponse.unsafeJson(
        {
          error: {
            code: "upstream_redirect",
            message: `The MCP server answered HTTP ${upstream.status}, a redirect; the gateway does not follow redirects, so set the server's url to the final address.`
          }
        },
        { status: 502 }
      )
    }
    if (upstream.status === 401 || upstream.status === 403) {
      upstream.abort()
      return HttpServerResponse.unsafeJson(
        {
          error: {
            code: "mcp_upstream_auth_failed",
            message: `The MCP server refused the gateway's request (HTTP ${upstream.status}); check the server's headers.`
          }
        },
        { status: 502, headers }
      )
    }
    const status = upstream.status >= 500 ? 502 : upstream.status
    const contentType = (upstream.headers["content-type"] ?? "").toLowerCase()
    if (contentType.includes("text/event-stream")) {
      const run = (message: unknown) => runPromise(screen(message))
      const body = relaySse(upstream.body, upstream.abort, run, limits, ending, release, eventId, stop)
      streamOwnsSlot = true
      return HttpServerResponse.raw(body, {
        status,
        headers: { ...headers, "cache-control": "no-cache" },
        contentType: "text/event-stream"
      })
    }
    const bytes = yield* Effect.promise(() =>
      readWhole(upstream.body, MAX_JSON_BYTES, limits.maxStreamMillis, stop?.signal).catch(() => undefined)
    )
    if (stop?.signal.aborted === true) {
      upstream.abort()
      return HttpServerResponse.unsafeJson(errorBodyOf(stop.error), { status: statusOf(stop.error) })
    }
    if (bytes === undefined) {
      return HttpServerResponse.unsafeJson(
        {
          error: {
            code: "mcp_response_unreadable",
            message: `The MCP server's answer broke off, was larger than ${MAX_JSON_BYTES} bytes, or took longer than ${limits.maxStreamMillis / 1000} s (GATEWAY_MAX_STREAM_SECONDS).`
          }
        },
        { status: 502, headers }
      )
    }
    const parsed = contentType.includes("application/json")
      ? Either.try(() => JSON.parse(bytes.toString("utf8")) as unknown)
      : Either.left("not JSON")
    if (Either.isRight(parsed) && isScreenableObject(parsed.right)) {
      const verdict = yield* screen(parsed.right)
      if (verdict === "drop") return HttpServerResponse.empty({ status: 202, headers })
      if (verdict !== "keep") return HttpServerResponse.unsafeJson(verdict.replace, { status, headers })
    } else if (status < 300 && bytes.length > 0) {
      // A success the gateway cannot screen (not one JSON-RPC message, whatever its content type says) is refused.
      return HttpServerResponse.unsafeJson(
        {
          error: {
            code: "mcp_response_unreadable",
            message: `The MCP server's answer is not one JSON-RPC message (nested at most ${Limits.body.depth} levels) the gateway can screen.`
          }
        },
        { status: 502, headers }
      )
    }
    return bytes.length === 0
      ? HttpServerResponse.empty({ status, headers })
      : HttpServerResponse.uint8Array(bytes, {
          status,
          headers,
          contentType: contentType || "application/octet-stream"
        })
  }).pipe(Effect.onExit((exit) => Effect.sync(() => (Exit.isFailure(exit) || !streamOwnsSlot) && release())))
}
