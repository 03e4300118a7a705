/**
 * Tool pinning, the defence against a "rug pull": an MCP server whose tools
 * were approved once (listed, screened, used) later changes what a tool says
 * or takes (a description with new instructions, a new parameter that
 * carries data out), and the model follows the new text unseen. The gateway
 * pins each tool's definition the first time it lists it (trust on first
 * use); a listing with another definition leaves the tool out, and its calls
 * are refused, until an admin accepts the change
 * (`POST /v1/mcp/servers/{id}/tools/{tool}/accept`, naming the digest they
 * reviewed). A tool left out of a listing as poisoned is not callable either
 * (a client can still name it): each environment's listing records or clears
 * its own finding, and the tool stays refused everywhere while any
 * environment's latest listing found it poisoned (fail closed: one
 * environment's passing listing does not undo another's finding).
 */
import { createHash } from "node:crypto"
import { Effect, Option } from "effect"
import { canonicalJson } from "../authorization/Receipts.js"
import { Conflict, NotFound } from "../http/Errors.js"
import { decodeCursor, encodeCursor, pageAfterCut } from "../platform/Cursor.js"
import { unstorableJson } from "../platform/Json.js"
import { MAX_PAGE_BYTES } from "../platform/PageBytes.js"
import { Limits, toTimestamp } from "../platform/Schemas.js"
import { McpToolPin } from "./Domain.js"
import { asObject, noticeResult } from "./Screening.js"
import { type ListedDefinition, type PinRow, ToolPinsRepo } from "./ToolPinsRepo.js"

type Json = Record<string, unknown>

/** The most tools pinned per server: more are left out of listings (a listing cannot grow the table without end). */
export const MAX_PINNED_TOOLS = 1_000

/**
 * The largest definition kept (canonical JSON characters): each pin stores the latest one, and a server
 * could otherwise make every pin as large as a whole answer (MAX_JSON_BYTES), for every admin read.
 */
export const MAX_DEFINITION_CHARS = Limits.json.string

/** A listed tool's definition (what reaches the model or shapes its calls) and its digest. */
interface Definition {
  readonly definition: Json
  readonly digest: string
  readonly size: number
}

const definitionOf = (tool: Json): Definition => {
  const { annotations, description, inputSchema, name, outputSchema, title } = tool
  const definition = { annotations, description, inputSchema, name, outputSchema, title }
  const json = canonicalJson(definition)
  return { definition, digest: createHash("sha256").update(json).digest("hex"), size: json.length }
}

/**
 * The named tools of a listing and their definitions (a name listed twice: its last definition). A name
 * longer than a tool call may carry is left out: it could be neither called nor accepted; so are the names
 * `.` and `..` (no URL path can name them) and a definition over MAX_DEFINITION_CHARS.
 */
export const definitionsOf = (listed: Json): ReadonlyMap<string, Definition> => {
  const tools = Array.isArray(listed["tools"]) ? listed["tools"] : []
  const definitions = new Map<string, Definition>()
  for (const tool of tools) {
    const object = asObject(tool)
    const name = object?.["name"]
    if (object === undefined || typeof name !== "string" || name.length > Limits.identifier) continue
    // `.` and `..` are dot segments: clients resolve them (even as %2e) before a path reaches us, so such
    // a tool's pin could be neither accepted nor deleted.
    if (name === "." || name === "..") continue
    // A name PostgreSQL cannot store as listed (NUL, unpaired surrogate) could never match its pin.
    if (unstorableJson(name) !== undefined) continue
    const definition = definitionOf(object)
    if (definition.size <= MAX_DEFINITION_CHARS) definitions.set(name, definition)
  }
  return definitions
}

/**
 * The tools of `listed` that can be pinned as listed: named, and, for a name listed twice, only the entries
 * of its recorded definition (`definitionsOf`: the last). A nameless tool, one whose name is too long, or an
 * earlier entry with another definition under the same name is left out: it would reach the model unpinned.
 */
export const pinnableTools = (listed: Json, definitions: ReadonlyMap<string, Definition>): Json => {
  const tools = Array.isArray(listed["tools"]) ? listed["tools"] : []
  return {
    ...listed,
    tools: tools.filter((tool) => {
      const object = asObject(tool)
      const name = object?.["name"]
      const recorded = typeof name === "string" ? definitions.get(name) : undefined
      return object !== undefined && recorded !== undefined && definitionOf(object).digest === recorded.digest
    })
  }
}

const statusOf = (row: PinRow) =>
  row.poisoned_in.length > 0 ? "poisoned" : row.seen_digest !== row.pinned_digest ? "changed" : ("pinned" as const)

const toToolPin = (row: PinRow) =>
  new McpToolPin({
    tool: row.tool,
    status: statusOf(row),
    pinned_digest: row.pinned_digest,
    seen_digest: row.seen_digest,
    seen_definition: row.seen_definition,
    poisoned_in: row.poisoned_in,
    pinned_at: toTimestamp(row.pinned_at),
    seen_at: toTimestamp(row.seen_at)
  })

/** What the agent reads for a call of a tool that is not callable (undefined: callable, or never listed). */
export const pinnedCallRefusal = (tool: string, pin: Option.Option<PinRow>) => {
  if (Option.isNone(pin)) return undefined
  if (pin.value.poisoned_in.length > 0) {
    return noticeResult(
      `The tool ${tool} is withheld by the guardrail: its description carries instructions a policy refuses. It cannot be called.`
    )
  }
  if (pin.value.seen_digest !== pin.value.pinned_digest) {
    return noticeResult(
      `The tool ${tool} is withheld by the guardrail: its definition changed since it was approved, and the change awaits an admin's acceptance.`
    )
  }
  return undefined
}

/** A pins cursor: `[tool]`, the last tool of the page before. */
const decodeToolCursor = (cursor: string) =>
  decodeCursor(cursor, 1).pipe(
    Option.filter(([tool]) => tool!.length > 0),
    Option.map(([tool]) => tool!)
  )

const pinNotFound = (tool: string) =>
  new NotFound({
    code: "tool_pin_not_found",
    message: `No tool ${tool} has been listed through this MCP server; tools are pinned when the gateway first lists them.`
  })

const pinMoved = (tool: string, current: string) =>
  new Conflict({
    code: "tool_pin_changed",
    message: `The tool ${tool} was listed with another definition since (seen_digest ${current}); read it again before accepting.`,
    details: [{ path: "seen_digest", message: `the latest listed definition is ${current}` }]
  })

const pinRaced = (tool: string) =>
  new Conflict({
    code: "tool_pin_changed",
    message: `The pin of ${tool} was removed or relisted while it was being accepted; read it again before accepting.`
  })

export class ToolPins extends Effect.Service<ToolPins>()("mcp/ToolPins", {
  effect: Effect.gen(function* () {
    const repo = yield* ToolPinsRepo

    /** The tools of a listing whose definition is not the pinned one. */
    const changed = (workspaceId: string, serverId: string, definitions: ReadonlyMap<string, Definition>) =>
      Effect.map(repo.pinnedDigests(workspaceId, serverId), (rows) => {
        const names = new Set<string>()
        for (const row of rows) {
          const listed = definitions.get(row.tool)
          if (listed !== undefined && listed.digest !== row.pinned_digest) names.add(row.tool)
        }
        return names
      })

    /**
     * Records a listing made in `environmentId` (its poisoned tools named); answers the listed tools pinned
     * as listed. A tool another listing pinned first with another definition (two first listings at once)
     * is not among them.
     */
    const record = (
      workspaceId: string,
      serverId: string,
      environmentId: string,
      definitions: ReadonlyMap<string, Definition>,
      poisoned: ReadonlySet<string>
    ) => {
      const listed: Array<ListedDefinition> = [...definitions]
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([tool, { definition, digest }]) => ({ tool, digest, definition, poisoned: poisoned.has(tool) }))
      return Effect.map(
        repo.recordListing(workspaceId, serverId, environmentId, listed, MAX_PINNED_TOOLS),
        (rows) =>
          new Set(rows.filter((row) => row.pinned_digest === definitions.get(row.tool)?.digest).map((row) => row.tool))
      )
    }

    /** Pins the latest listed definition of `tool`, if it is still the one the admin read (`seenDigest`). */
    const accept = Effect.fn("ToolPins.accept")(function* (
      workspaceId: string,
      serverId: string,
      tool: string,
      seenDigest: string
    ) {
      const pin = yield* repo.accept(workspaceId, serverId, tool, seenDigest)
      if (Option.isNone(pin)) return yield* pinNotFound(tool)
      if (pin.value.accepted) return toToolPin(pin.value)
      // The digest read is the one sent: a removal or listing committed while the update waited for the row.
      return yield* pin.value.seen_digest === seenDigest ? pinRaced(tool) : pinMoved(tool, pin.value.seen_digest)
    })

    /** Forgets a pin: the tool is pinned afresh at its next listing (one the server no longer lists frees its place). */
    const remove = Effect.fn("ToolPins.remove")(function* (workspaceId: string, serverId: string, tool: string) {
      if (!(yield* repo.remove(workspaceId, serverId, tool))) return yield* pinNotFound(tool)
    })

    return {
      changed,
      record,
      accept,
      remove,
      find: repo.find,
      /** One page of a server's pins by tool name (each carries its latest definition: cut at MAX_PAGE_BYTES). */
      list: Effect.fn("ToolPins.list")(function* (
        workspaceId: string,
        serverId: string,
        query: { readonly limit: number; readonly withheld: boolean },
        cursor: string | undefined
      ) {
        const { next, page } = yield* pageAfterCut(
          cursor,
          decodeToolCursor,
          (row: PinRow) => encodeCursor([row.tool]),
          (after) => repo.list(workspaceId, serverId, query, after, MAX_PAGE_BYTES)
        )
        return { tools: page.map(toToolPin), ...next }
      })
    }
  }),
  dependencies: [ToolPinsRepo.Default]
}) {}
