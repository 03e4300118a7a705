/** MCP servers behind the gateway, and the JSON-RPC messages the endpoint reads: their schemas. */
import { Schema } from "effect"
import { Origin } from "../catalog/Domain.js"
import {
  boundedJsonObject,
  boundedString,
  Identifier,
  Limits,
  NonEmptyIdentifier,
  NonEmptyName,
  Timestamp,
  Url
} from "../platform/Schemas.js"

export const McpServerId = Identifier.pipe(Schema.brand("McpServerId")).annotations({ identifier: "McpServerId" })
export type McpServerId = typeof McpServerId.Type

/** Headers the gateway sets itself (transport, session, framing): a server's own headers may not replace them. */
export const RESERVED_HEADERS: ReadonlySet<string> = new Set([
  "accept",
  "accept-encoding",
  "connection",
  "content-length",
  "content-type",
  "host",
  "keep-alive",
  "last-event-id",
  "mcp-protocol-version",
  "mcp-session-id",
  "proxy-authorization",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade"
])

export const MAX_HEADERS = 20

const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$/
// Visible ASCII and spaces only: no CR/LF (header injection), bounded like other secrets. A value of another
// type is refused without quoting it (a credential sent as a list would be echoed in the 400).
const HeaderValue = Schema.String.annotations({ message: () => "expected a string" }).pipe(
  Schema.maxLength(Limits.text, { message: () => `must be at most ${Limits.text.toLocaleString("en-US")} characters` }),
  Schema.pattern(/^[\x20-\x7e]*$/, { message: () => "expected printable ASCII" })
)

/** Why a header name cannot be used; undefined when it can. */
const headerNameProblem = (name: string) =>
  !HEADER_NAME.test(name)
    ? "expected an HTTP header name (at most 100 characters)"
    : RESERVED_HEADERS.has(name.toLowerCase())
      ? "set by the gateway itself"
      : undefined

/** Extra request headers sent to the server (credentials, usually): write-only, decoded as Redacted. */
// Names are checked in the filter: a refined Record key would silently drop a name it refuses.
export const McpHeaders = Schema.Redacted(
  Schema.Record({ key: Schema.String, value: HeaderValue }).pipe(
    Schema.filter(
      (headers) => {
        const names = Object.keys(headers)
        if (names.length > MAX_HEADERS) return `at most ${MAX_HEADERS} headers`
        // Header names are case-insensitive: of two spellings of one name, only one value would be sent.
        const seen = new Map<string, string>()
        for (const name of names) {
          const problem = headerNameProblem(name)
          if (problem !== undefined) return { path: [name], message: problem }
          const other = seen.get(name.toLowerCase())
          if (other !== undefined) return { path: [name], message: `the same header as ${other} (names ignore case)` }
          seen.set(name.toLowerCase(), name)
        }
        return undefined
      },
      { jsonSchema: { maxProperties: MAX_HEADERS } }
    )
  )
).annotations({ description: `Request headers for the server (write-only), at most ${MAX_HEADERS}` })

/** `configured`: headers are stored and decrypt with this service's key; `unreadable`: they do not (key rotated). */
export const HeadersStatus = Schema.Literal("none", "configured", "unreadable")

const ServerUrl = Url.annotations({
  description: "The server's streamable HTTP endpoint: https, or http to hosts on HTTP_URL_ALLOWLIST"
})

export class McpServer extends Schema.Class<McpServer>("McpServer")({
  id: McpServerId,
  display_name: Schema.String,
  url: Schema.String,
  agent_id: Schema.String,
  result_origin: Schema.String,
  header_names: Schema.Array(Schema.String),
  headers_status: HeadersStatus,
  created_at: Timestamp,
  updated_at: Timestamp
}) {}

export const CreateMcpServer = Schema.Struct({
  display_name: NonEmptyName,
  url: ServerUrl,
  agent_id: NonEmptyIdentifier,
  result_origin: Schema.optional(Origin),
  headers: Schema.optional(McpHeaders)
})

/** `headers` replaces the whole set (`null` removes them); a new `url` needs `headers` in the same body when some are set. */
export const UpdateMcpServer = Schema.Struct({
  display_name: Schema.optional(NonEmptyName),
  url: Schema.optional(ServerUrl),
  agent_id: Schema.optional(NonEmptyIdentifier),
  result_origin: Schema.optional(Origin),
  headers: Schema.optional(Schema.NullOr(McpHeaders))
})

/** `pinned`: as accepted; `changed`: listed with another definition, awaiting acceptance; `poisoned`: its description is refused. */
export const ToolPinStatus = Schema.Literal("pinned", "changed", "poisoned")

/** The definition of a tool as pinned by the gateway (ToolPins.ts): digests of canonical JSON. */
export class McpToolPin extends Schema.Class<McpToolPin>("McpToolPin")({
  tool: Schema.String,
  status: ToolPinStatus,
  pinned_digest: Schema.String,
  seen_digest: Schema.String,
  /** The definition of the latest listing (name, title, description, schemas, annotations): what accepting pins. */
  seen_definition: Schema.Unknown,
  /** The environments whose latest listing left the tool out as poisoned (while any does, it is not callable). */
  poisoned_in: Schema.Array(Schema.String),
  pinned_at: Timestamp,
  seen_at: Timestamp
}) {}

/** The digest of the definition the admin read (`seen_digest`): accepting pins that one, or answers 409. */
export const AcceptMcpToolPin = Schema.Struct({ seen_digest: NonEmptyIdentifier })

/** A JSON-RPC message as the endpoint reads it; everything else in it passes through unread. */
export const JsonRpcMessage = Schema.Struct({
  jsonrpc: Schema.Literal("2.0"),
  id: Schema.optional(Schema.Union(boundedString(Limits.identifier), Schema.Number)),
  method: Schema.optional(boundedString(Limits.identifier))
})
export type JsonRpcMessage = typeof JsonRpcMessage.Type

/** `tools/call` params: the tool and its arguments, held to the bounds of a proposed event's params. */
export const ToolCallParams = Schema.Struct({
  name: NonEmptyIdentifier,
  arguments: Schema.optional(boundedJsonObject(Limits.decidedContent))
})

/** The MCP endpoint's body: one JSON-RPC message, passed on as sent. */
export const McpMessage = Schema.Unknown.annotations({ description: "One JSON-RPC 2.0 message (MCP)" })
