/** SQL of provider connections and gateway routes. Every query takes the workspace id. */
import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { dieOnErrors } from "../platform/Sql.js"

export interface ConnectionRow {
  readonly id: string
  readonly workspace_id: string
  readonly display_name: string
  readonly kind: string
  readonly base_url: string
  readonly default_model: string | null
  readonly encrypted_api_key: string
  readonly created_at: Date
  readonly updated_at: Date
}

export interface RouteRow {
  readonly id: string
  readonly agent_id: string
  readonly display_name: string
  readonly provider_connection_id: string
  readonly created_at: Date
  readonly updated_at: Date
}

/** A route with its connection, as the proxy needs it. */
export interface RouteTarget {
  readonly route_id: string
  readonly agent_id: string
  readonly connection_id: string
  readonly kind: string
  readonly base_url: string
  readonly default_model: string | null
  readonly encrypted_api_key: string
}

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
}

const first = <A>(rows: ReadonlyArray<A>) => Option.fromNullable(rows[0])

export class GatewayRepo extends Effect.Service<GatewayRepo>()("gateway/GatewayRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const routeColumns = sql`id, agent_id, display_name, provider_connection_id, created_at, updated_at`

    return dieOnErrors({
      listConnections: (workspaceId: string) =>
        sql<ConnectionRow>`select * from provider_connections where workspace_id = ${workspaceId}
                           order by created_at desc, id desc`,
      findConnection: (workspaceId: string, id: string) =>
        sql<ConnectionRow>`select * from provider_connections where workspace_id = ${workspaceId} and id = ${id}`.pipe(
          Effect.map(first)
        ),
      insertConnection: (row: Omit<ConnectionRow, "created_at" | "updated_at">) =>
        sql<ConnectionRow>`insert into provider_connections ${sql.insert(row)} returning *`.pipe(
          Effect.map((rows) => rows[0]!)
        ),
      updateConnection: (workspaceId: string, id: string, changes: ConnectionChanges) =>
        sql<ConnectionRow>`update provider_connections set ${sql.update({ ...changes, updated_at: new Date() })}
                           where workspace_id = ${workspaceId} and id = ${id} returning *`.pipe(Effect.map(first)),

      listRoutes: (workspaceId: string) =>
        sql<RouteRow>`select ${routeColumns} from gateway_routes where workspace_id = ${workspaceId}
                      order by created_at desc, id desc`,
      insertRoute: (row: Omit<RouteRow, "created_at" | "updated_at"> & { readonly workspace_id: string }) =>
        sql<RouteRow>`insert into gateway_routes ${sql.insert(row)} returning ${routeColumns}`.pipe(
          Effect.map((rows) => rows[0]!)
        ),
      updateRoute: (workspaceId: string, id: string, changes: RouteChanges) =>
        sql<RouteRow>`update gateway_routes set ${sql.update({ ...changes, updated_at: new Date() })}
                      where workspace_id = ${workspaceId} and id = ${id} returning ${routeColumns}`.pipe(
          Effect.map(first)
        ),

      routeTarget: (workspaceId: string, routeId: string) =>
        sql<RouteTarget>`
          select r.id as route_id, r.agent_id, c.id as connection_id, c.kind, c.base_url, c.default_model,
                 c.encrypted_api_key
            from gateway_routes r
            join provider_connections c on c.id = r.provider_connection_id and c.workspace_id = r.workspace_id
           where r.workspace_id = ${workspaceId} and r.id = ${routeId}`.pipe(Effect.map(first))
    })
  })
}) {}
