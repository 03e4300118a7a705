/** SQL of budget alert configs, meter totals and firings. Every query takes the workspace id. */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { dieOnErrors } from "../platform/Sql.js"
import { storeWithinCap } from "../platform/WorkspaceCaps.js"

/** A budget alert config; `threshold_value` (bigint) is selected as text. */
const ConfigRow = Schema.Struct({
  id: Schema.String,
  workspace_id: Schema.String,
  name: Schema.String,
  meter: Schema.String,
  threshold_type: Schema.String,
  threshold_value: Schema.String,
  time_window: Schema.String,
  enabled: Schema.Boolean,
  principal_id: Schema.NullOr(Schema.String),
  webhook_url: Schema.NullOr(Schema.String),
  secret_salt: Schema.String,
  created_at: Schema.DateFromSelf,
  updated_at: Schema.DateFromSelf
})
export type ConfigRow = typeof ConfigRow.Type

/** A firing; `cap_minor` and `spent_minor` (bigint) are selected as text. */
const FiringRow = Schema.Struct({
  id: Schema.String,
  config_id: Schema.String,
  workspace_id: Schema.String,
  principal_id: Schema.NullOr(Schema.String),
  meter: Schema.String,
  currency: Schema.String,
  cap_minor: Schema.String,
  spent_minor: Schema.String,
  time_window: Schema.String,
  window_start: Schema.DateFromSelf,
  fired_at: Schema.DateFromSelf,
  payload: Schema.Unknown
})
export type FiringRow = typeof FiringRow.Type
const decodeFirings = Schema.decodeUnknown(Schema.Array(FiringRow))

/** A window total after an increment; `amount` (bigint) is selected as text. */
const TotalRow = Schema.Struct({ time_window: Schema.String, principal_id: Schema.String, amount: Schema.String })

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
  /** The amount crossed: one firing per config, window and amount (a changed threshold fires again). */
  readonly threshold_amount: number
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

const ConfigKey = Schema.Struct({ workspaceId: Schema.String, id: Schema.String })
const IdRow = Schema.Struct({ id: Schema.String })

const decodeConfigs = Schema.decodeUnknown(Schema.Array(ConfigRow))
const decodeTotals = Schema.decodeUnknown(Schema.Array(TotalRow))
const decodeIds = Schema.decodeUnknown(Schema.Array(IdRow))

export class AlertsRepo extends Effect.Service<AlertsRepo>()("billing/AlertsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const columns = sql.literal(configColumns)

    const listConfigs = SqlSchema.findAll({
      Request: Schema.String,
      Result: ConfigRow,
      execute: (workspaceId) => sql`select ${columns} from budget_alert_configs
                                    where workspace_id = ${workspaceId} order by created_at desc, id desc`
    })
    const findConfig = SqlSchema.findOne({
      Request: ConfigKey,
      Result: ConfigRow,
      execute: ({ id, workspaceId }) =>
        sql`select ${columns} from budget_alert_configs where workspace_id = ${workspaceId} and id = ${id}`
    })
    const deleteConfig = SqlSchema.findAll({
      Request: ConfigKey,
      Result: IdRow,
      execute: ({ id, workspaceId }) =>
        sql`delete from budget_alert_configs where workspace_id = ${workspaceId} and id = ${id} returning id`
    })
    const matchingConfigs = SqlSchema.findAll({
      Request: Schema.Struct({
        workspaceId: Schema.String,
        meter: Schema.String,
        principalId: Schema.NullOr(Schema.String)
      }),
      Result: ConfigRow,
      execute: ({ meter, principalId, workspaceId }) =>
        sql`select ${columns} from budget_alert_configs
            where workspace_id = ${workspaceId} and meter = ${meter} and enabled
            and (principal_id is null or principal_id = ${principalId ?? ""})`
    })
    /** Newest first, `limit + 1` rows after the (fired_at, id) cursor. */
    const listFirings = (
      workspaceId: string,
      configId: string,
      limit: number,
      after: Option.Option<{ readonly at: string; readonly id: string }>
    ) =>
      sql`select id, config_id, workspace_id, principal_id, meter, currency,
                 cap_minor::text as cap_minor, spent_minor::text as spent_minor,
                 time_window, window_start, fired_at, payload
          from budget_alert_firings
          where workspace_id = ${workspaceId} and config_id = ${configId}
          ${Option.match(after, {
            onNone: () => sql``,
            onSome: (position) => sql`and (fired_at, id) < (${position.at}::timestamptz, ${position.id})`
          })}
          order by fired_at desc, id desc limit ${limit + 1}`.pipe(Effect.flatMap(decodeFirings))

    return dieOnErrors({
      /** Inserts the config unless the workspace already has `max` (none then). */
      insertConfig: (
        row: Omit<ConfigRow, "created_at" | "updated_at" | "threshold_value"> & { threshold_value: number },
        max: number
      ) =>
        storeWithinCap(
          sql,
          "budget_alert_configs",
          row.workspace_id,
          max,
          Effect.succeed(false),
          sql`insert into budget_alert_configs ${sql.insert(row)} returning ${columns}`.pipe(
            Effect.flatMap(decodeConfigs),
            Effect.map((rows) => rows[0]!)
          )
        ),

      listConfigs: (workspaceId: string) => listConfigs(workspaceId),

      findConfig: (workspaceId: string, id: string) => findConfig({ workspaceId, id }),

      updateConfig: (workspaceId: string, id: string, changes: ConfigChanges) =>
        sql`update budget_alert_configs
            set ${sql.update({ ...changes, updated_at: new Date() })}
            where workspace_id = ${workspaceId} and id = ${id} returning ${columns}`.pipe(
          Effect.flatMap(decodeConfigs),
          Effect.map((rows) => Option.fromNullable(rows[0]))
        ),

      deleteConfig: (workspaceId: string, id: string) =>
        Effect.map(deleteConfig({ workspaceId, id }), (rows) => rows.length > 0),

      /** Enabled configs of a meter that watch the whole workspace or this principal. */
      matchingConfigs: (workspaceId: string, meter: string, principalId: string | null) =>
        matchingConfigs({ workspaceId, meter, principalId }),

      /** Adds to the window totals; answers each row's new total. */
      addToTotals: (increments: ReadonlyArray<TotalIncrement>) =>
        sql`
          insert into budget_meter_totals ${sql.insert(increments.map((increment) => ({ ...increment })))}
          on conflict (workspace_id, meter, time_window, window_start, principal_id)
          do update set amount = budget_meter_totals.amount + excluded.amount
          returning time_window, principal_id, amount::text as amount`.pipe(Effect.flatMap(decodeTotals)),

      /** Inserts the firing unless this config already fired at this amount in this window; answers whether it did now. */
      insertFiring: (firing: NewFiring) =>
        sql`
          insert into budget_alert_firings ${sql.insert({ ...firing, payload: JSON.stringify(firing.payload) })}
          on conflict (config_id, time_window, window_start, threshold_amount) do nothing returning id`.pipe(
          Effect.flatMap(decodeIds),
          Effect.map((rows) => rows.length > 0)
        ),

      listFirings
    })
  })
}) {}
