/**
 * The SSE event ids the MCP gateway gives its clients, so that a stream
 * broken off (or closed by the server to make the client poll, as the
 * 2025-11-25 MCP spec allows) can be resumed with `Last-Event-ID` through a
 * gateway that keeps no session state. Each id carries the server's own
 * event id and what the gateway needs to screen the rest of the stream as
 * it screened its start: the request's method and id, and for a tool call
 * the tool and the origin of its result. It is signed (HMAC-SHA256 under a
 * key derived from the service's secret) and bound to the workspace, the
 * server and the MCP session, so a client cannot make a result be screened
 * as another tool's, or from a more trusted origin.
 */
import { createHmac, timingSafeEqual } from "node:crypto"
import { Either, Option, Redacted, Schema } from "effect"

/** What a stream answers, as far as its screening goes. */
export const StreamContext = Schema.Struct({
  /** The request's method when its answer is screened; `other`: passed as it is; `stream`: the GET stream. */
  method: Schema.Literal("tools/call", "tools/list", "resources/read", "prompts/get", "other", "stream"),
  request_id: Schema.optional(Schema.Union(Schema.String, Schema.Number)),
  tool: Schema.optional(Schema.String),
  origin: Schema.optional(Schema.String)
})
export type StreamContext = typeof StreamContext.Type

const Payload = Schema.Struct({ ...StreamContext.fields, event: Schema.String, session: Schema.String })
const decodePayload = Schema.decodeUnknownEither(Schema.parseJson(Payload))

const PREFIX = "g1."
/** Longest `Last-Event-ID` read (an id the gateway issued is far shorter unless the server's own is long). */
export const MAX_EVENT_ID_CHARS = 4_000

/** Where an id is valid: one workspace's server, one MCP session ("" before the session has an id). */
export interface EventIdBinding {
  readonly workspaceId: string
  readonly serverId: string
  readonly session: string
}

export const makeEventIds = (secret: Redacted.Redacted<string>) => {
  const key = createHmac("sha256", Redacted.value(secret)).update("mcp-event-ids").digest()
  const sign = (binding: EventIdBinding, payload: string) =>
    createHmac("sha256", key)
      .update(`${binding.workspaceId}\n${binding.serverId}\n${payload}`)
      .digest()
      .subarray(0, 18)
      .toString("base64url")

  /** The id the client sees for the server's event `event` of a stream answering `context`. */
  const issue = (binding: EventIdBinding, context: StreamContext, event: string) => {
    const payload = Buffer.from(JSON.stringify({ ...context, event, session: binding.session })).toString("base64url")
    return `${PREFIX}${payload}.${sign(binding, payload)}`
  }

  /**
   * The server's event id and the stream's context from an id this gateway issued for `binding`; none
   * for anything else (another server's or session's id, a changed or made-up one).
   */
  const read = (binding: EventIdBinding, id: string) => {
    if (!id.startsWith(PREFIX) || id.length > MAX_EVENT_ID_CHARS) return Option.none()
    const [payload = "", mac = ""] = id.slice(PREFIX.length).split(".")
    const expected = Buffer.from(sign(binding, payload))
    const given = Buffer.from(mac)
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return Option.none()
    return Either.match(decodePayload(Buffer.from(payload, "base64url").toString("utf8")), {
      onLeft: () => Option.none(),
      onRight: ({ event, session, ...context }) =>
        // An id issued before the session had one (the initialize answer) resumes in any session of the server.
        session === "" || session === binding.session ? Option.some({ event, context }) : Option.none()
    })
  }

  return { issue, read }
}
