/** SQL of provider connections and gateway routes. Every query takes the workspace id. */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { dieOnErrors } from "../platform/Sql.js"
import { storeWithinCap } from "../platform/WorkspaceCaps.js"

const ConnectionRow = Schema.Struct({
  id: Schema.String,
  workspace_id: Schema.String,
  display_name: Schema.String,
  kind: Schema.String,
  base_url: Schema.String,
  default_model: Schema.NullOr(Schema.String),
  encrypted_api_key: Schema.String,
  created_at: Schema.DateFromSelf,
  updated_at: Schema.DateFromSelf
})
export type ConnectionRow = typeof ConnectionRow.Type

/** A route's guardrail modes, one column per direction (checked by the table: off, observe, enforce). */
const GuardrailColumns = {
  guardrail_input: Schema.Literal("off", "observe", "enforce"),
  guardrail_output: Schema.Literal("off", "observe", "enforce"),
  guardrail_tool_calls: Schema.Literal("off", "observe", "enforce")
}

const RouteRow = Schema.Struct({
  id: Schema.String,
  agent_id: Schema.String,
  display_name: Schema.String,
  provider_connection_id: Schema.String,
  ...GuardrailColumns,
  created_at: Schema.DateFromSelf,
  updated_at: Schema.DateFromSelf
})
export type RouteRow = typeof RouteRow.Type

/** A route with its connection, as the proxy needs it. */
const RouteTarget = Schema.Struct({
  route_id: Schema.String,
  agent_id: Schema.String,
  connection_id: Schema.String,
  kind: Schema.String,
  base_url: Schema.String,
  default_model: Schema.NullOr(Schema.String),
  encrypted_api_key: Schema.String,
  ...GuardrailColumns
})
export type RouteTarget = typeof RouteTarget.Type

export interface ConnectionChanges {
  readonly display_name?: string
  readonly base_url?: string
  readonly default_model?: string | null
  readonly encrypted_api_key?: string
}

export interface RouteChanges {
  readonly agent_id?: string
  readonly display_name?: string
  readonly provider_connection_id?: string
  readonly guardrail_input?: string
  readonly guardrail_output?: string
  readonly guardrail_tool_calls?: string
}

const first = <A>(rows: ReadonlyArray<A>) => Option.fromNullable(rows[0])

const Key = Schema.Struct({ workspaceId: Schema.String, id: Schema.String })

const decodeConnections = Schema.decodeUnknown(Schema.Array(ConnectionRow))
const decodeRoutes = Schema.decodeUnknown(Schema.Array(RouteRow))

export class GatewayRepo extends Effect.Service<GatewayRepo>()("gateway/GatewayRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const routeColumns = sql`id, agent_id, display_name, provider_connection_id, guardrail_input, guardrail_output,
                             guardrail_tool_calls, created_at, updated_at`

    const listConnections = SqlSchema.findAll({
      Request: Schema.String,
      Result: ConnectionRow,
      execute: (workspaceId) => sql`select * from provider_connections where workspace_id = ${workspaceId}
                                    order by created_at desc, id desc`
    })
    const findConnection = SqlSchema.findOne({
      Request: Key,
      Result: ConnectionRow,
      execute: ({ id, workspaceId }) =>
        sql`select * from provider_connections where workspace_id = ${workspaceId} and id = ${id}`
    })
    const lockConnection = SqlSchema.findOne({
      Request: Key,
      Result: ConnectionRow,
      execute: ({ id, workspaceId }) =>
        sql`select * from provider_connections where workspace_id = ${workspaceId} and id = ${id} for update`
    })
    const listRoutes = SqlSchema.findAll({
      Request: Schema.String,
      Result: RouteRow,
      execute: (workspaceId) => sql`select ${routeColumns} from gateway_routes where workspace_id = ${workspaceId}
                                    order by created_at desc, id desc`
    })
    const routeTarget = SqlSchema.findOne({
      Request: Key,
      Result: RouteTarget,
      execute: ({ id, workspaceId }) => sql`
        select r.id as route_id, r.agent_id, c.id as connection_id, c.kind, c.base_url, c.default_model,
               c.encrypted_api_key,
               r.guardrail_input, r.guardrail_output, r.guardrail_tool_calls
          from gateway_routes r
          join provider_connections c on c.id = r.provider_connection_id and c.workspace_id = r.workspace_id
         where r.workspace_id = ${workspaceId} and r.id = ${id}`
    })

    return dieOnErrors({
      listConnections: (workspaceId: string) => listConnections(workspaceId),
      findConnection: (workspaceId: string, id: string) => findConnection({ workspaceId, id }),
      /** The connection, locked until the transaction ends (a change compared with what is stored). */
      lockConnection: (workspaceId: string, id: string) => lockConnection({ workspaceId, id }),
      /** None when the workspace already has `max` connections. */
      insertConnection: (row: Omit<ConnectionRow, "created_at" | "updated_at">, max: number) =>
        storeWithinCap(
          sql,
          "provider_connections",
          row.workspace_id,
          max,
          Effect.succeed(false),
          sql`insert into provider_connections ${sql.insert(row)} returning *`.pipe(
            Effect.flatMap(decodeConnections),
            Effect.map((rows) => rows[0]!)
          )
        ),
      updateConnection: (workspaceId: string, id: string, changes: ConnectionChanges) =>
        sql`update provider_connections set ${sql.update({ ...changes, updated_at: new Date() })}
            where workspace_id = ${workspaceId} and id = ${id} returning *`.pipe(
          Effect.flatMap(decodeConnections),
          Effect.map(first)
        ),

      listRoutes: (workspaceId: string) => listRoutes(workspaceId),
      /** None when the workspace already has `max` routes. */
      insertRoute: (
        row: Omit<RouteRow, "created_at" | "updated_at"> & { readonly workspace_id: string },
        max: number
      ) =>
        storeWithinCap(
          sql,
          "gateway_routes",
          row.workspace_id,
          max,
          Effect.succeed(false),
          sql`insert into gateway_routes ${sql.insert(row)} returning ${routeColumns}`.pipe(
            Effect.flatMap(decodeRoutes),
            Effect.map((rows) => rows[0]!)
          )
        ),
      updateRoute: (workspaceId: string, id: string, changes: RouteChanges) =>
        sql`update gateway_routes set ${sql.update({ ...changes, updated_at: new Date() })}
            where workspace_id = ${workspaceId} and id = ${id} returning ${routeColumns}`.pipe(
          Effect.flatMap(decodeRoutes),
          Effect.map(first)
        ),

      routeTarget: (workspaceId: string, routeId: string) => routeTarget({ workspaceId, id: routeId })
    })
  })
}) {}
