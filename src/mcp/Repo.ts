/** SQL of MCP servers (and the disabled tools their listings leave out). Every query takes the workspace id. */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { dieOnErrors } from "../platform/Sql.js"

const ServerRow = Schema.Struct({
  id: Schema.String,
  workspace_id: Schema.String,
  display_name: Schema.String,
  url: Schema.String,
  agent_id: Schema.String,
  result_origin: Schema.String,
  header_names: Schema.Array(Schema.String),
  encrypted_headers: Schema.NullOr(Schema.String),
  created_at: Schema.DateFromSelf,
  updated_at: Schema.DateFromSelf
})
export type ServerRow = typeof ServerRow.Type

export interface ServerChanges {
  readonly display_name?: string
  readonly url?: string
  readonly agent_id?: string
  readonly result_origin?: string
  readonly header_names?: ReadonlyArray<string>
  readonly encrypted_headers?: string | null
}

const Key = Schema.Struct({ workspaceId: Schema.String, id: Schema.String })
const decodeRows = Schema.decodeUnknown(Schema.Array(ServerRow))
const decodeToolNames = Schema.decodeUnknown(Schema.Array(Schema.Struct({ tool: Schema.String })))

export class McpRepo extends Effect.Service<McpRepo>()("mcp/McpRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const find = SqlSchema.findOne({
      Request: Key,
      Result: ServerRow,
      execute: ({ id, workspaceId }) =>
        sql`select * from mcp_servers where workspace_id = ${workspaceId} and id = ${id}`
    })
    // The names go in as JSON text (a jsonb column), the way the catalog stores its documents.
    const withArray = <A extends { readonly header_names?: ReadonlyArray<string> }>(row: A) =>
      row.header_names === undefined ? row : { ...row, header_names: JSON.stringify(row.header_names) }

    return dieOnErrors({
      /** Newest first, before `before` (a page cursor's position): up to `limit + 1` rows. */
      list: (workspaceId: string, limit: number, before: Option.Option<{ readonly at: string; readonly id: string }>) =>
        sql`select * from mcp_servers where workspace_id = ${workspaceId}
            ${Option.match(before, {
              onNone: () => sql``,
              onSome: (p) => sql`and (created_at, id) < (${p.at}::timestamptz, ${p.id})`
            })}
            order by created_at desc, id desc limit ${limit + 1}`.pipe(Effect.flatMap(decodeRows)),
      find: (workspaceId: string, id: string) => find({ workspaceId, id }),
      /** `find`, locking the row until the transaction ends (a change that depends on what it read). */
      lock: (workspaceId: string, id: string) =>
        sql`select * from mcp_servers where workspace_id = ${workspaceId} and id = ${id} for update`.pipe(
          Effect.flatMap(decodeRows),
          Effect.map((rows) => Option.fromNullable(rows[0]))
        ),
      insert: (row: Omit<ServerRow, "created_at" | "updated_at">) =>
        sql`insert into mcp_servers ${sql.insert(withArray(row))} returning *`.pipe(
          Effect.flatMap(decodeRows),
          Effect.map((rows) => rows[0]!)
        ),
      update: (workspaceId: string, id: string, changes: ServerChanges) =>
        sql`update mcp_servers set ${sql.update({ ...withArray(changes), updated_at: new Date() })}
            where workspace_id = ${workspaceId} and id = ${id} returning *`.pipe(
          Effect.flatMap(decodeRows),
          Effect.map((rows) => Option.fromNullable(rows[0]))
        ),
      /**
       * The names of the workspace's tools disabled in tool metadata: what every `tools/list` leaves out. Names
       * only: a listing read every tool's metadata document before.
       */
      disabledTools: (workspaceId: string) =>
        sql`select tool from tool_metadata where workspace_id = ${workspaceId} and not enabled`.pipe(
          Effect.flatMap(decodeToolNames),
          Effect.map((rows) => rows.map((row) => row.tool))
        ),
      remove: (workspaceId: string, id: string) =>
        sql`delete from mcp_servers where workspace_id = ${workspaceId} and id = ${id} returning id`.pipe(
          Effect.map((rows) => rows.length === 1)
        )
    })
  })
}) {}
