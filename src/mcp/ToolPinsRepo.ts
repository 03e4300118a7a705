/** SQL of MCP tool pins (ToolPins.ts). Every query takes the workspace and server ids. */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { storableJsonText } from "../platform/Json.js"
import { CutColumns, cutAtBytes, cutPage } from "../platform/PageBytes.js"
import { dieOnErrors } from "../platform/Sql.js"

const PinRow = Schema.Struct({
  tool: Schema.String,
  pinned_digest: Schema.String,
  seen_digest: Schema.String,
  /** The environments whose latest listing left the tool out as poisoned. */
  poisoned_in: Schema.Array(Schema.String),
  seen_definition: Schema.Unknown,
  pinned_at: Schema.DateFromSelf,
  seen_at: Schema.DateFromSelf
})
export type PinRow = typeof PinRow.Type

/** One tool of a listing: its name, its definition and digest, and whether the listing's decision found it poisoned. */
export interface ListedDefinition {
  readonly tool: string
  readonly digest: string
  readonly definition: unknown
  readonly poisoned: boolean
}

const ServerTool = Schema.Struct({ workspaceId: Schema.String, serverId: Schema.String, tool: Schema.String })
const decodeAccepted = Schema.decodeUnknown(
  Schema.Array(Schema.extend(PinRow, Schema.Struct({ accepted: Schema.Boolean })))
)
const decodePage = Schema.decodeUnknown(Schema.Array(Schema.extend(PinRow, CutColumns)))
const decodeListed = Schema.decodeUnknown(
  Schema.Array(Schema.Struct({ tool: Schema.String, pinned_digest: Schema.String }))
)

/**
 * A pin's columns as read: `poisoned_in` keeps only environments that still exist (a deleted environment
 * lists no more, so its finding could never be cleared; a listing in flight when it was deleted may even
 * record it afterwards).
 */
const pinColumns = (sql: SqlClient.SqlClient, workspaceId: string) =>
  sql`p.tool, p.pinned_digest, p.seen_digest, p.seen_definition, p.pinned_at, p.seen_at,
      ${livePoisoning(sql, workspaceId)} as poisoned_in`

/** The environments of a pin's `poisoned_in` (`p`) that still exist. */
const livePoisoning = (sql: SqlClient.SqlClient, workspaceId: string) =>
  sql`array(select e from unnest(p.poisoned_in) as e
            where exists (select 1 from environments v where v.workspace_id = ${workspaceId} and v.id = e))`

export class ToolPinsRepo extends Effect.Service<ToolPinsRepo>()("mcp/ToolPinsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const find = SqlSchema.findOne({
      Request: ServerTool,
      Result: PinRow,
      execute: ({ serverId, tool, workspaceId }) =>
        sql`select ${pinColumns(sql, workspaceId)} from mcp_tool_pins p
            where p.workspace_id = ${workspaceId} and p.server_id = ${serverId} and p.tool = ${tool}`
    })

    return dieOnErrors({
      /**
       * One page of a server's pins by tool name (only those not callable when `withheld`: changed or
       * poisoned), after `after`: at most `limit`, cut after the pin whose latest definition (JSON bytes, up to
       * 64 KiB each) brings the page to `maxBytes` (`cutAtBytes`, at least one); `more` when pins follow.
       */
      list: (
        workspaceId: string,
        serverId: string,
        query: { readonly limit: number; readonly withheld: boolean },
        after: Option.Option<string>,
        maxBytes: number
      ) =>
        cutAtBytes(
          sql,
          sql`select ${pinColumns(sql, workspaceId)} from mcp_tool_pins p
              where p.workspace_id = ${workspaceId} and p.server_id = ${serverId}
              ${Option.match(after, { onNone: () => sql``, onSome: (tool) => sql`and p.tool > ${tool}` })}
              ${
                query.withheld
                  ? sql`and (p.seen_digest <> p.pinned_digest or cardinality(${livePoisoning(sql, workspaceId)}) > 0)`
                  : sql``
              }
              order by p.tool limit ${query.limit + 1}`,
          sql`tool`,
          sql`octet_length(seen_definition::text)`,
          maxBytes
        ).pipe(
          Effect.flatMap(decodePage),
          Effect.map((rows) => cutPage(rows, query.limit))
        ),
      find: (workspaceId: string, serverId: string, tool: string) => find({ workspaceId, serverId, tool }),
      /** Each pin's tool and pinned digest (what a listing is compared with; not the stored definitions). */
      pinnedDigests: (workspaceId: string, serverId: string) =>
        sql`select tool, pinned_digest from mcp_tool_pins
            where workspace_id = ${workspaceId} and server_id = ${serverId}`.pipe(Effect.flatMap(decodeListed)),
      /**
       * Records a listing made in `environmentId`: a known tool gets its latest definition and this
       * environment's poisoning, a new one is pinned as listed while the server holds fewer than `maxPins`.
       * Rows are written in tool order (concurrent listings lock them in the same order). Answers each
       * recorded tool's pinned digest.
       */
      recordListing: (
        workspaceId: string,
        serverId: string,
        environmentId: string,
        listed: ReadonlyArray<ListedDefinition>,
        maxPins: number
      ) =>
        listed.length === 0
          ? Effect.succeed([])
          : sql`
              with listed as (
                select x.tool, x.digest, x.definition, x.poisoned
                from jsonb_to_recordset(${storableJsonText(listed)}::jsonb)
                  as x(tool text, digest text, definition jsonb, poisoned boolean)),
              known as (select count(*) as pins from mcp_tool_pins
                        where workspace_id = ${workspaceId} and server_id = ${serverId}),
              fresh as (select listed.tool from listed
                        where not exists (select 1 from mcp_tool_pins p where p.workspace_id = ${workspaceId}
                                          and p.server_id = ${serverId} and p.tool = listed.tool)),
              admitted as (select a.tool from (select tool, row_number() over (order by tool) as n from fresh) a, known
                           where a.n + known.pins <= ${maxPins})
              insert into mcp_tool_pins (workspace_id, server_id, tool, pinned_digest, seen_digest, seen_definition,
                                         poisoned_in)
              select ${workspaceId}, ${serverId}, l.tool, l.digest, l.digest, l.definition,
                     case when l.poisoned then array[${environmentId}]::text[] else '{}'::text[] end
              from listed l
              where l.tool not in (select tool from fresh) or l.tool in (select tool from admitted)
              order by l.tool
              on conflict (workspace_id, server_id, tool) do update set
                seen_digest = excluded.seen_digest, seen_definition = excluded.seen_definition, seen_at = now(),
                -- The row as it is now, not as this statement first read it: another environment's listing may
                -- have changed it meanwhile.
                poisoned_in = case
                  when cardinality(excluded.poisoned_in) = 0 then array_remove(mcp_tool_pins.poisoned_in, ${environmentId})
                  when mcp_tool_pins.poisoned_in @> array[${environmentId}]::text[] then mcp_tool_pins.poisoned_in
                  else mcp_tool_pins.poisoned_in || ${environmentId}::text end
              returning tool, pinned_digest`.pipe(Effect.flatMap(decodeListed)),
      /**
       * Accepts the latest listed definition of a tool as its pin when it is still `seenDigest`; else the
       * pin as this same statement saw it (none: never listed), so a 409 never names a digest that a
       * listing racing between two statements had just put back.
       */
      accept: (workspaceId: string, serverId: string, tool: string, seenDigest: string) =>
        sql`with p as (
              update mcp_tool_pins set pinned_digest = seen_digest, pinned_at = now()
              where workspace_id = ${workspaceId} and server_id = ${serverId} and tool = ${tool}
                and seen_digest = ${seenDigest}
              returning *)
            select true as accepted, ${pinColumns(sql, workspaceId)} from p
            union all
            select false as accepted, ${pinColumns(sql, workspaceId)} from mcp_tool_pins p
            where p.workspace_id = ${workspaceId} and p.server_id = ${serverId} and p.tool = ${tool}
              and not exists (select 1 from p)`.pipe(
          Effect.flatMap(decodeAccepted),
          Effect.map((rows) => Option.fromNullable(rows[0]))
        ),
      /** Forgets one pin (whether there was one). */
      remove: (workspaceId: string, serverId: string, tool: string) =>
        sql`delete from mcp_tool_pins where workspace_id = ${workspaceId} and server_id = ${serverId} and tool = ${tool}
            returning tool`.pipe(Effect.map((rows) => rows.length === 1)),
      /** Forgets a server's pins (its url changed: another server, trusted on first use again). */
      clear: (workspaceId: string, serverId: string) =>
        sql`delete from mcp_tool_pins where workspace_id = ${workspaceId} and server_id = ${serverId}`.pipe(
          Effect.asVoid
        )
    })
  })
}) {}
