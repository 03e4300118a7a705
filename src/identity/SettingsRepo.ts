/**
 * SQL of a workspace's runtime configuration: its settings row, its
 * environments (with checker-mode overrides) and the API keys bound to them.
 * Every query takes the workspace id (key lookups by hash excepted).
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { dieOnErrors } from "../platform/Sql.js"
import { storeWithinCap } from "../platform/WorkspaceCaps.js"

const EnvironmentRow = Schema.Struct({
  id: Schema.String,
  workspace_id: Schema.String,
  name: Schema.String,
  slug: Schema.String,
  description: Schema.NullOr(Schema.String),
  is_default: Schema.Boolean,
  approval_checker_mode: Schema.NullOr(Schema.String),
  flow_checker_mode: Schema.NullOr(Schema.String),
  memory_checker_mode: Schema.NullOr(Schema.String),
  param_checker_mode: Schema.NullOr(Schema.String),
  checker_modes_updated_at: Schema.NullOr(Schema.DateFromSelf),
  created_at: Schema.DateFromSelf,
  updated_at: Schema.DateFromSelf
})
export type EnvironmentRow = typeof EnvironmentRow.Type

const SettingsRow = Schema.Struct({
  workspace_id: Schema.String,
  approval_checker_mode: Schema.String,
  flow_checker_mode: Schema.String,
  memory_checker_mode: Schema.String,
  param_checker_mode: Schema.String,
  data_handling_mode: Schema.String,
  default_action: Schema.String,
  escalation_webhook_url: Schema.NullOr(Schema.String),
  retention_days: Schema.String,
  telemetry_enabled: Schema.Boolean,
  require_impact_before_enable: Schema.Boolean,
  config: Schema.Record({ key: Schema.String, value: Schema.Unknown }),
  updated_at: Schema.DateFromSelf
})
export type SettingsRow = typeof SettingsRow.Type

const ApiKeyRow = Schema.Struct({
  id: Schema.String,
  workspace_id: Schema.String,
  environment_id: Schema.String,
  environment: Schema.String,
  name: Schema.String,
  prefix: Schema.String,
  status: Schema.Literal("active", "revoked"),
  created_by: Schema.String,
  created_at: Schema.DateFromSelf,
  last_used_at: Schema.NullOr(Schema.DateFromSelf)
})
export type ApiKeyRow = typeof ApiKeyRow.Type

const NewEnvironment = Schema.Struct({
  id: Schema.String,
  workspaceId: Schema.String,
  name: Schema.String,
  slug: Schema.String,
  description: Schema.NullOr(Schema.String),
  isDefault: Schema.Boolean
})
type NewEnvironment = typeof NewEnvironment.Type

const ActiveKeyRow = Schema.Struct({ id: Schema.String, workspace_id: Schema.String, environment_id: Schema.String })

const InWorkspace = Schema.Struct({ workspaceId: Schema.String, id: Schema.String })
const first = <A>(rows: ReadonlyArray<A>) => Option.fromNullable(rows[0])

export class SettingsRepo extends Effect.Service<SettingsRepo>()("identity/SettingsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const environmentColumns = sql`e.id, e.workspace_id, e.name, e.slug, e.description, e.is_default,
      e.approval_checker_mode, e.flow_checker_mode, e.memory_checker_mode, e.param_checker_mode,
      e.checker_modes_updated_at, e.created_at, e.updated_at`
    const apiKeyColumns = sql`k.id, k.workspace_id, k.environment_id, e.slug as environment, k.name, k.prefix,
      k.status, k.created_by::text as created_by, k.created_at, k.last_used_at`

    const insertEnvironment = SqlSchema.findOne({
      Request: NewEnvironment,
      Result: EnvironmentRow,
      execute: (environment) =>
        sql`insert into environments (id, workspace_id, name, slug, description, is_default)
            values (${environment.id}, ${environment.workspaceId}, ${environment.name}, ${environment.slug},
                    ${environment.description}, ${environment.isDefault})
            on conflict (workspace_id, slug) do nothing
            returning *`
    })
    const findEnvironment = SqlSchema.findOne({
      Request: InWorkspace,
      Result: EnvironmentRow,
      execute: ({ id, workspaceId }) =>
        sql`select ${environmentColumns} from environments e where e.workspace_id = ${workspaceId} and e.id = ${id}`
    })
    const decodeEnvironments = Schema.decodeUnknown(Schema.Array(EnvironmentRow))
    const decodeSettings = Schema.decodeUnknown(Schema.Array(SettingsRow))
    const decodeApiKeys = Schema.decodeUnknown(Schema.Array(ApiKeyRow))
    const activeKeysInEnvironment = SqlSchema.single({
      Request: InWorkspace,
      Result: Schema.Struct({ count: Schema.NumberFromString }),
      execute: ({ id, workspaceId }) =>
        sql`select count(*)::text as count from api_keys
            where workspace_id = ${workspaceId} and environment_id = ${id} and status = 'active'`
    })

    return dieOnErrors({
      // ---- environments
      insertEnvironment: (environment: NewEnvironment) => insertEnvironment(environment),
      /** `insertEnvironment`, or none (outer) when the workspace already has `max` environments. */
      insertEnvironmentWithinCap: (environment: NewEnvironment, max: number) =>
        storeWithinCap(
          sql,
          "environments",
          environment.workspaceId,
          max,
          Effect.succeed(false),
          insertEnvironment(environment)
        ),
      listEnvironments: SqlSchema.findAll({
        Request: Schema.String,
        Result: EnvironmentRow,
        execute: (workspaceId) =>
          sql`select ${environmentColumns} from environments e
              where e.workspace_id = ${workspaceId} order by e.is_default desc, e.created_at desc`
      }),
      findEnvironment: (workspaceId: string, id: string) => findEnvironment({ workspaceId, id }),
      findDefaultEnvironment: SqlSchema.findOne({
        Request: Schema.String,
        Result: EnvironmentRow,
        execute: (workspaceId) =>
          sql`select ${environmentColumns} from environments e where e.workspace_id = ${workspaceId} and e.is_default`
      }),
      /**
       * The environment (the default one when `id` is undefined), locked until the transaction ends: `share`
       * against deletion (a key being bound to it), `update` to delete it. None once a concurrent delete committed.
       */
      lockEnvironment: (workspaceId: string, id: string | undefined, mode: "share" | "update") =>
        sql`select ${environmentColumns} from environments e where e.workspace_id = ${workspaceId}
            and ${id === undefined ? sql`e.is_default` : sql`e.id = ${id}`}
            ${mode === "share" ? sql`for key share` : sql`for update`}`.pipe(
          Effect.flatMap(decodeEnvironments),
          Effect.map(first)
        ),
      slugTaken: (workspaceId: string, slug: string) =>
        sql`select 1 from environments where workspace_id = ${workspaceId} and slug = ${slug}`.pipe(
          Effect.map((rows) => rows.length > 0)
        ),
      updateEnvironment: (workspaceId: string, id: string, patch: { name?: string; description?: string | null }) =>
        sql`update environments set
            name = coalesce(${patch.name ?? null}, name),
            description = case when ${patch.description !== undefined} then ${patch.description ?? null} else description end,
            updated_at = now()
          where workspace_id = ${workspaceId} and id = ${id} returning *`.pipe(
          Effect.flatMap(decodeEnvironments),
          Effect.map(first)
        ),
      deleteEnvironment: (workspaceId: string, id: string) =>
        sql`delete from environments where workspace_id = ${workspaceId} and id = ${id}`,
      activeKeysInEnvironment: (workspaceId: string, id: string) =>
        Effect.map(activeKeysInEnvironment({ workspaceId, id }), (row) => row.count),
      replaceCheckerModes: (
        workspaceId: string,
        id: string,
        modes: { approval: string | null; flow: string | null; memory: string | null; param: string | null }
      ) =>
        sql`update environments set approval_checker_mode = ${modes.approval},
            flow_checker_mode = ${modes.flow}, memory_checker_mode = ${modes.memory}, param_checker_mode = ${modes.param},
            checker_modes_updated_at = now()
          where workspace_id = ${workspaceId} and id = ${id} returning *`.pipe(
          Effect.flatMap(decodeEnvironments),
          Effect.map(first)
        ),

      // ---- settings
      findSettings: SqlSchema.findOne({
        Request: Schema.String,
        Result: SettingsRow,
        execute: (workspaceId) => sql`select * from workspace_settings where workspace_id = ${workspaceId}`
      }),
      /** Locks the workspace's settings row until the transaction ends (a read-merge-write of `config`). */
      lockSettings: (workspaceId: string) =>
        sql`select 1 from workspace_settings where workspace_id = ${workspaceId} for update`,
      updateSettings: (workspaceId: string, values: Record<string, unknown>) =>
        sql`update workspace_settings set ${sql.update(values)}, updated_at = now()
            where workspace_id = ${workspaceId} returning *`.pipe(Effect.flatMap(decodeSettings), Effect.map(first)),

      // ---- API keys
      insertApiKey: (key: {
        id: string
        workspaceId: string
        environmentId: string
        name: string
        prefix: string
        keyHash: string
        createdBy: string
      }) =>
        sql`insert into api_keys (id, workspace_id, environment_id, name, prefix, key_hash, created_by)
            values (${key.id}, ${key.workspaceId}, ${key.environmentId}, ${key.name}, ${key.prefix}, ${key.keyHash}, ${key.createdBy})`,
      listApiKeys: (workspaceId: string, ids?: ReadonlyArray<string>) =>
        sql`select ${apiKeyColumns} from api_keys k join environments e on e.id = k.environment_id
            where k.workspace_id = ${workspaceId}
            ${ids === undefined ? sql`` : sql`and k.id in ${sql.in(ids)}`}
            order by k.created_at desc, k.id desc`.pipe(Effect.flatMap(decodeApiKeys)),
      revokeApiKeys: (workspaceId: string, ids: ReadonlyArray<string>) =>
        sql`update api_keys set status = 'revoked', revoked_at = coalesce(revoked_at, now())
            where workspace_id = ${workspaceId} and id in ${sql.in(ids)}`,
      findActiveKeyByHash: SqlSchema.findOne({
        Request: Schema.String,
        Result: ActiveKeyRow,
        execute: (keyHash) =>
          sql`select id, workspace_id, environment_id from api_keys where key_hash = ${keyHash} and status = 'active'`
      }),
      keyIsActive: (id: string) =>
        sql`select 1 from api_keys where id = ${id} and status = 'active'`.pipe(Effect.map((rows) => rows.length > 0)),
      touchApiKeys: (lastUsed: ReadonlyArray<{ id: string; at: Date }>) =>
        Effect.forEach(
          lastUsed,
          ({ at, id }) =>
            sql`update api_keys set last_used_at = greatest(coalesce(last_used_at, ${at}), ${at}) where id = ${id}`,
          { discard: true }
        )
    })
  })
}) {}
