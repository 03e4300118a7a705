/** SQL of budget alert configs, meter totals and firings. Every query takes the workspace id. */
import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { dieOnErrors } from "../platform/Sql.js"

export interface ConfigRow {
  readonly id: string
  readonly workspace_id: string
  readonly name: string
  readonly meter: string
  readonly threshold_type: string
  readonly threshold_value: string
  readonly time_window: string
  readonly enabled: boolean
  readonly principal_id: string | null
  readonly webhook_url: string | null
  readonly secret_salt: string
  readonly created_at: Date
  readonly updated_at: Date
}

export interface FiringRow {
  readonly id: string
  readonly config_id: string
  readonly workspace_id: string
  readonly principal_id: string | null
  readonly meter: string
  readonly currency: string
  readonly cap_minor: string
  readonly spent_minor: string
  readonly time_window: string
  readonly window_start: Date
  readonly fired_at: Date
  readonly payload: unknown
}

export interface NewFiring {
  readonly id: string
  readonly config_id: string
  readonly workspace_id: string
  readonly principal_id: string | null
  readonly meter: string
  readonly currency: string
  readonly cap_minor: number
  readonly spent_minor: number
  readonly time_window: string
  readonly window_start: Date
  readonly fired_at: Date
  readonly payload: unknown
}

export interface TotalIncrement {
  readonly workspace_id: string
  readonly meter: string
  readonly time_window: string
  readonly window_start: Date
  readonly principal_id: string
  readonly amount: number
}

export type ConfigChanges = Partial<
  Pick<ConfigRow, "name" | "meter" | "threshold_type" | "time_window" | "enabled" | "principal_id" | "webhook_url">
> & { readonly threshold_value?: number }

const configColumns = `id, workspace_id, name, meter, threshold_type, threshold_value::text as threshold_value,
  time_window, enabled, principal_id, webhook_url, secret_salt, created_at, updated_at`

export class AlertsRepo extends Effect.Service<AlertsRepo>()("billing/AlertsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const columns = sql.literal(configColumns)

    return dieOnErrors({
      insertConfig: (
        row: Omit<ConfigRow, "created_at" | "updated_at" | "threshold_value"> & { threshold_value: number }
      ) =>
        sql<ConfigRow>`insert into budget_alert_configs ${sql.insert(row)} returning ${columns}`.pipe(
          Effect.map((rows) => rows[0]!)
        ),

      listConfigs: (workspaceId: string) =>
        sql<ConfigRow>`select ${columns} from budget_alert_configs
                       where workspace_id = ${workspaceId} order by created_at desc, id desc`,

      findConfig: (workspaceId: string, id: string) =>
        sql<ConfigRow>`select ${columns} from budget_alert_configs
                       where workspace_id = ${workspaceId} and id = ${id}`.pipe(
          Effect.map((rows) => Option.fromNullable(rows[0]))
        ),

      updateConfig: (workspaceId: string, id: string, changes: ConfigChanges) =>
        sql<ConfigRow>`update budget_alert_configs
                       set ${sql.update({ ...changes, updated_at: new Date() })}
                       where workspace_id = ${workspaceId} and id = ${id} returning ${columns}`.pipe(
          Effect.map((rows) => Option.fromNullable(rows[0]))
        ),

      deleteConfig: (workspaceId: string, id: string) =>
        sql<{ id: string }>`delete from budget_alert_configs
                            where workspace_id = ${workspaceId} and id = ${id} returning id`.pipe(
          Effect.map((rows) => rows.length > 0)
        ),

      /** Enabled configs of a meter that watch the whole workspace or this principal. */
      matchingConfigs: (workspaceId: string, meter: string, principalId: string | null) =>
        sql<ConfigRow>`select ${columns} from budget_alert_configs
                       where workspace_id = ${workspaceId} and meter = ${meter} and enabled
                       and (principal_id is null or principal_id = ${principalId ?? ""})`,

      /** Adds to the window totals; answers each row's new total. */
      addToTotals: (increments: ReadonlyArray<TotalIncrement>) =>
        sql<{ time_window: string; principal_id: string; amount: string }>`
          insert into budget_meter_totals ${sql.insert(increments.map((increment) => ({ ...increment })))}
          on conflict (workspace_id, meter, time_window, window_start, principal_id)
          do update set amount = budget_meter_totals.amount + excluded.amount
          returning time_window, principal_id, amount::text as amount`,

      /** Inserts the firing unless this config already fired in this window; answers whether it did now. */
      insertFiring: (firing: NewFiring) =>
        sql<{ id: string }>`
          insert into budget_alert_firings ${sql.insert({ ...firing, payload: JSON.stringify(firing.payload) })}
          on conflict (config_id, time_window, window_start) do nothing returning id`.pipe(
          Effect.map((rows) => rows.length > 0)
        ),

      listFirings: (workspaceId: string, configId: string) =>
        sql<FiringRow>`select id, config_id, workspace_id, principal_id, meter, currency,
                              cap_minor::text as cap_minor, spent_minor::text as spent_minor,
                              time_window, window_start, fired_at, payload
                       from budget_alert_firings
                       where workspace_id = ${workspaceId} and config_id = ${configId}
                       order by fired_at desc, id desc`
    })
  })
}) {}
