/** SQL of MCP tool pins (ToolPins.ts). Every query takes the workspace and server ids. */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { dieOnErrors } from "../platform/Sql.js"

const PinRow = Schema.Struct({
  tool: Schema.String,
  pinned_digest: Schema.String,
  seen_digest: Schema.String,
  poisoned: Schema.Boolean,
  pinned_at: Schema.DateFromSelf,
  seen_at: Schema.DateFromSelf
})
export type PinRow = typeof PinRow.Type

/** One tool of a listing: its name, its definition's digest, and whether the listing's decision found it poisoned. */
export interface ListedDefinition {
  readonly tool: string
  readonly digest: string
  readonly poisoned: boolean
}

const Server = Schema.Struct({ workspaceId: Schema.String, serverId: Schema.String })
const ServerTool = Schema.Struct({ workspaceId: Schema.String, serverId: Schema.String, tool: Schema.String })
const decodeRows = Schema.decodeUnknown(Schema.Array(PinRow))

export class ToolPinsRepo extends Effect.Service<ToolPinsRepo>()("mcp/ToolPinsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const list = SqlSchema.findAll({
      Request: Server,
      Result: PinRow,
      execute: ({ serverId, workspaceId }) =>
        sql`select * from mcp_tool_pins where workspace_id = ${workspaceId} and server_id = ${serverId} order by tool`
    })
    const find = SqlSchema.findOne({
      Request: ServerTool,
      Result: PinRow,
      execute: ({ serverId, tool, workspaceId }) =>
        sql`select * from mcp_tool_pins
            where workspace_id = ${workspaceId} and server_id = ${serverId} and tool = ${tool}`
    })

    return dieOnErrors({
      list: (workspaceId: string, serverId: string) => list({ workspaceId, serverId }),
      find: (workspaceId: string, serverId: string, tool: string) => find({ workspaceId, serverId, tool }),
      /**
       * Records a listing: a known tool gets its latest digest and poisoning, a new one is pinned as listed
       * while the server holds fewer than `maxPins`. Answers the pins of the listed tools after it.
       */
      recordListing: (
        workspaceId: string,
        serverId: string,
        listed: ReadonlyArray<ListedDefinition>,
        maxPins: number
      ) =>
        listed.length === 0
          ? Effect.succeed([])
          : sql`
              with listed as (
                select x.tool, x.digest, x.poisoned
                from jsonb_to_recordset(${JSON.stringify(listed)}::jsonb) as x(tool text, digest text, poisoned boolean)),
              known as (select count(*) as pins from mcp_tool_pins
                        where workspace_id = ${workspaceId} and server_id = ${serverId}),
              fresh as (select listed.* from listed
                        where not exists (select 1 from mcp_tool_pins p where p.workspace_id = ${workspaceId}
                                          and p.server_id = ${serverId} and p.tool = listed.tool)),
              admitted as (select a.* from (select f.*, row_number() over (order by f.tool) as n from fresh f) a, known
                           where a.n + known.pins <= ${maxPins})
              insert into mcp_tool_pins (workspace_id, server_id, tool, pinned_digest, seen_digest, poisoned)
              select ${workspaceId}, ${serverId}, tool, digest, digest, poisoned from admitted
              union all
              select ${workspaceId}, ${serverId}, listed.tool, p.pinned_digest, listed.digest, listed.poisoned
              from listed join mcp_tool_pins p on p.workspace_id = ${workspaceId} and p.server_id = ${serverId}
                and p.tool = listed.tool
              on conflict (workspace_id, server_id, tool) do update set
                seen_digest = excluded.seen_digest, poisoned = excluded.poisoned, seen_at = now()
              returning tool, pinned_digest, seen_digest, poisoned, pinned_at, seen_at`.pipe(
              Effect.flatMap(decodeRows)
            ),
      /** Accepts the latest listed definition of a tool as its pin. */
      accept: (workspaceId: string, serverId: string, tool: string) =>
        sql`update mcp_tool_pins set pinned_digest = seen_digest, pinned_at = now()
            where workspace_id = ${workspaceId} and server_id = ${serverId} and tool = ${tool}
            returning tool, pinned_digest, seen_digest, poisoned, pinned_at, seen_at`.pipe(
          Effect.flatMap(decodeRows),
          Effect.map((rows) => Option.fromNullable(rows[0]))
        ),
      /** Forgets a server's pins (its url changed: another server, trusted on first use again). */
      clear: (workspaceId: string, serverId: string) =>
        sql`delete from mcp_tool_pins where workspace_id = ${workspaceId} and server_id = ${serverId}`.pipe(
          Effect.asVoid
        )
    })
  })
}) {}
