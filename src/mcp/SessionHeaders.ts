/**
 * The headers of the MCP endpoint's upstream requests: the client's session
 * and protocol version, checked, beside the server's own headers.
 */
import type * as Headers from "@effect/platform/Headers"
import { Effect } from "effect"
import { BadRequest } from "../http/Errors.js"

/** What the gateway accepts when it posts a message of its own to the server (an answer on the client's behalf). */
export const ANSWER_ACCEPT = "application/json, text/event-stream"

export const badRequest = (path: string, message: string) =>
  new BadRequest({ code: "validation_failed", message: `${path}: ${message}`, details: [{ path, message }] })

// The spec's session ids are visible ASCII; bounded like other identifiers.
const SESSION_ID = /^[\x21-\x7e]{1,200}$/
const PROTOCOL_VERSION = /^[A-Za-z0-9._-]{1,64}$/

/** The client's session and protocol headers, checked, for the upstream request and the decisions. */
export const sessionOf = (incoming: Headers.Headers) =>
  Effect.gen(function* () {
    const session = incoming["mcp-session-id"]
    if (session !== undefined && !SESSION_ID.test(session)) {
      return yield* badRequest("Mcp-Session-Id", "expected 1 to 200 visible ASCII characters")
    }
    const version = incoming["mcp-protocol-version"]
    const forwarded: Record<string, string> = {}
    if (session !== undefined) forwarded["mcp-session-id"] = session
    if (version !== undefined && PROTOCOL_VERSION.test(version)) forwarded["mcp-protocol-version"] = version
    return { session, forwarded }
  })

/** An upstream request's headers: the server's, the client's forwarded ones, and the transport's own. */
export const upstreamHeaders = (
  server: Readonly<Record<string, string>>,
  forwarded: Record<string, string>,
  accept: string
) => ({
  ...server,
  ...forwarded,
  "content-type": "application/json",
  accept,
  "accept-encoding": "identity"
})
