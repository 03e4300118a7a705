/**
 * Tool pinning, the defence against a "rug pull": an MCP server whose tools
 * were approved once (listed, screened, used) later changes what a tool says
 * or takes (a description with new instructions, a new parameter that
 * carries data out), and the model follows the new text unseen. The gateway
 * pins each tool's definition the first time it lists it (trust on first
 * use); a listing with another definition leaves the tool out, and its calls
 * are refused, until an admin accepts the change
 * (`POST /v1/mcp/servers/{id}/tools/{tool}/accept`). A tool the latest
 * listing's decision found poisoned is not callable either (it was left out
 * of the list, but a client can still name it).
 */
import { createHash } from "node:crypto"
import { Effect, Option } from "effect"
import { canonicalJson } from "../authorization/Receipts.js"
import { NotFound } from "../http/Errors.js"
import { toTimestamp } from "../platform/Schemas.js"
import { orFailWith } from "../platform/Sql.js"
import { McpToolPin } from "./Domain.js"
import { asObject, noticeResult } from "./Screening.js"
import { type ListedDefinition, type PinRow, ToolPinsRepo } from "./ToolPinsRepo.js"

type Json = Record<string, unknown>

/** The most tools pinned per server: more are left out of listings (a listing cannot grow the table without end). */
export const MAX_PINNED_TOOLS = 1_000

/** What of a tool reaches the model or shapes its calls: its definition, as a digest. */
const toolDigest = (tool: Json) => {
  const { annotations, description, inputSchema, name, outputSchema, title } = tool
  const definition = { annotations, description, inputSchema, name, outputSchema, title }
  return createHash("sha256").update(canonicalJson(definition)).digest("hex")
}

/** The named tools of a listing and their digests (a name listed twice: its last definition). */
export const definitionsOf = (listed: Json): ReadonlyMap<string, string> => {
  const tools = Array.isArray(listed["tools"]) ? listed["tools"] : []
  const definitions = new Map<string, string>()
  for (const tool of tools) {
    const object = asObject(tool)
    if (typeof object?.["name"] === "string") definitions.set(object["name"], toolDigest(object))
  }
  return definitions
}

const statusOf = (row: PinRow) =>
  row.poisoned ? "poisoned" : row.seen_digest !== row.pinned_digest ? "changed" : ("pinned" as const)

const toToolPin = (row: PinRow) =>
  new McpToolPin({
    tool: row.tool,
    status: statusOf(row),
    pinned_digest: row.pinned_digest,
    seen_digest: row.seen_digest,
    pinned_at: toTimestamp(row.pinned_at),
    seen_at: toTimestamp(row.seen_at)
  })

/** What the agent reads for a call of a tool that is not callable (undefined: callable, or never listed). */
export const pinnedCallRefusal = (tool: string, pin: Option.Option<PinRow>) => {
  if (Option.isNone(pin)) return undefined
  switch (statusOf(pin.value)) {
    case "poisoned":
      return noticeResult(
        `The tool ${tool} is withheld by the guardrail: its description carries instructions a policy refuses. It cannot be called.`
      )
    case "changed":
      return noticeResult(
        `The tool ${tool} is withheld by the guardrail: its definition changed since it was approved, and the change awaits an admin's acceptance.`
      )
    case "pinned":
      return undefined
  }
}

const pinNotFound = (tool: string) =>
  new NotFound({
    code: "tool_pin_not_found",
    message: `No tool ${tool} has been listed through this MCP server; tools are pinned when the gateway first lists them.`
  })

export class ToolPins extends Effect.Service<ToolPins>()("mcp/ToolPins", {
  effect: Effect.gen(function* () {
    const repo = yield* ToolPinsRepo

    /** The tools of a listing whose definition is not the pinned one. */
    const changed = (workspaceId: string, serverId: string, definitions: ReadonlyMap<string, string>) =>
      Effect.map(repo.list(workspaceId, serverId), (rows) => {
        const names = new Set<string>()
        for (const row of rows) {
          const digest = definitions.get(row.tool)
          if (digest !== undefined && digest !== row.pinned_digest) names.add(row.tool)
        }
        return names
      })

    /** Records a listing (its poisoned tools named); answers the listed tools that hold a pin. */
    const record = (
      workspaceId: string,
      serverId: string,
      definitions: ReadonlyMap<string, string>,
      poisoned: ReadonlySet<string>
    ) => {
      const listed: Array<ListedDefinition> = [...definitions].map(([tool, digest]) => ({
        tool,
        digest,
        poisoned: poisoned.has(tool)
      }))
      return Effect.map(
        repo.recordListing(workspaceId, serverId, listed, MAX_PINNED_TOOLS),
        (rows) => new Set(rows.map((row) => row.tool))
      )
    }

    return {
      changed,
      record,
      find: repo.find,
      clear: repo.clear,
      list: (workspaceId: string, serverId: string) =>
        Effect.map(repo.list(workspaceId, serverId), (rows) => rows.map(toToolPin)),
      accept: (workspaceId: string, serverId: string, tool: string) =>
        repo.accept(workspaceId, serverId, tool).pipe(
          orFailWith(() => pinNotFound(tool)),
          Effect.map(toToolPin)
        )
    }
  }),
  dependencies: [ToolPinsRepo.Default]
}) {}
