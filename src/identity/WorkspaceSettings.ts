/**
 * A workspace's runtime settings and its environments (with their
 * checker-mode overrides). Every function takes the workspace id.
 */
import { Effect, Option } from "effect"
import { auditedWrites, checkedWrites } from "../audit/Chain.js"
import { makeNoticeCache } from "../platform/ChangeNotices.js"
import { orFailWith } from "../platform/Sql.js"
import { Conflict, NotFound, validationFailed } from "../http/Errors.js"
import { prefixedId } from "../platform/Ids.js"
import { AppConfig } from "../platform/Config.js"
import { OutboundGuard } from "../platform/OutboundGuard.js"
import { capReached } from "../platform/WorkspaceCaps.js"
import { jsonOverLimit, Limits, toTimestamp, toTimestampOrNull } from "../platform/Schemas.js"
import { EnvironmentId } from "./Domain.js"
import { type EnvironmentRow, SettingsRepo, type SettingsRow } from "./SettingsRepo.js"

type CheckerMode = "off" | "observe" | "enforce"
type Modes = { readonly [K in "approval" | "flow" | "memory" | "param"]: CheckerMode | null }

const parseConfig = (config: SettingsRow["config"] | string): Record<string, unknown> =>
  typeof config === "string" ? (JSON.parse(config) as Record<string, unknown>) : config

export const toSettings = (row: SettingsRow) => ({
  approval_checker_mode: row.approval_checker_mode as CheckerMode,
  flow_checker_mode: row.flow_checker_mode as CheckerMode,
  memory_checker_mode: row.memory_checker_mode as CheckerMode,
  param_checker_mode: row.param_checker_mode as CheckerMode,
  data_handling_mode: row.data_handling_mode as "raw_allowed" | "redacted" | "metadata_only",
  default_action: row.default_action as "permit" | "defer" | "deny",
  escalation_webhook_url: row.escalation_webhook_url,
  retention_days: row.retention_days,
  telemetry_enabled: row.telemetry_enabled,
  require_impact_before_enable: row.require_impact_before_enable,
  config: parseConfig(row.config),
  updated_at: toTimestamp(row.updated_at)
})

export const toEnvironment = (row: EnvironmentRow) => ({
  id: EnvironmentId.make(row.id),
  name: row.name,
  slug: row.slug,
  description: row.description,
  is_default: row.is_default,
  created_at: toTimestamp(row.created_at),
  updated_at: toTimestamp(row.updated_at)
})

export const toCheckerModes = (row: EnvironmentRow) => ({
  approval_checker_mode: row.approval_checker_mode as CheckerMode | null,
  flow_checker_mode: row.flow_checker_mode as CheckerMode | null,
  memory_checker_mode: row.memory_checker_mode as CheckerMode | null,
  param_checker_mode: row.param_checker_mode as CheckerMode | null,
  updated_at: toTimestampOrNull(row.checker_modes_updated_at)
})

/**
 * Each patch is bounded by its schema, but keys accumulate across patches: the merged config must stay within
 * the same JSON caps (256 keys at its top too) and `Limits.settingsConfigBytes` as a whole.
 */
const storedConfigProblem = (merged: Record<string, unknown>, stored: string) =>
  Buffer.byteLength(stored) > Limits.settingsConfigBytes
    ? {
        path: [],
        message: `the merged config must be at most ${Limits.settingsConfigBytes.toLocaleString("en-US")} bytes of JSON (remove keys with null)`
      }
    : jsonOverLimit(merged, Limits.json)

const environmentNotFound = (id: string) =>
  new NotFound({ code: "environment_not_found", message: `Environment ${id} does not exist in this workspace.` })

export interface SettingsPatch {
  readonly approval_checker_mode?: CheckerMode | undefined
  readonly flow_checker_mode?: CheckerMode | undefined
  readonly memory_checker_mode?: CheckerMode | undefined
  readonly param_checker_mode?: CheckerMode | undefined
  readonly data_handling_mode?: "raw_allowed" | "redacted" | "metadata_only" | undefined
  readonly default_action?: "permit" | "defer" | "deny" | undefined
  readonly escalation_webhook_url?: string | null | undefined
  readonly retention_days?: string | undefined
  readonly telemetry_enabled?: boolean | undefined
  readonly require_impact_before_enable?: boolean | undefined
  readonly config?: { readonly [key: string]: unknown } | undefined
}

/** A workspace's settings and environments, as the hot paths read them. */
export interface RuntimeConfig {
  readonly settings: ReturnType<typeof toSettings>
  readonly environments: ReadonlyMap<
    string,
    { readonly slug: string; readonly isDefault: boolean; readonly modes: ReturnType<typeof toCheckerModes> }
  >
}

export class WorkspaceSettings extends Effect.Service<WorkspaceSettings>()("identity/WorkspaceSettings", {
  scoped: Effect.gen(function* () {
    const repo = yield* SettingsRepo
    const outbound = yield* OutboundGuard
    const audited = yield* auditedWrites
    const checkedWrite = yield* checkedWrites
    // Every hot-path read of the workspace's runtime config holds all its environments.
    const maxEnvironments = (yield* AppConfig).maxEnvironmentsPerWorkspace
    // Hot paths (decisions, gateway admission, run events) read a workspace's settings and environments on every
    // request: cached until a change here, or in any other instance, drops them (src/platform/ChangeNotices.ts).
    const runtimeCache = yield* makeNoticeCache<RuntimeConfig>("workspace_settings")
    /** After a change has committed: drop the workspace's cached runtime config in every instance. */
    const changed =
      <A, E, R>(workspaceId: string) =>
      (effect: Effect.Effect<A, E, R>) =>
        Effect.tap(effect, () => runtimeCache.changed(workspaceId))
    /**
     * A write in a transaction attributed to the caller (the audit chain), then `changed`: dropped before the
     * commit, a hot-path read in between would cache the old modes again.
     */
    const written =
      <A, E, R>(workspaceId: string) =>
      (effect: Effect.Effect<A, E, R>) =>
        effect.pipe(audited, changed(workspaceId))

    const settingsOf = Effect.fn("WorkspaceSettings.settingsOf")((workspaceId: string) =>
      repo.findSettings(workspaceId).pipe(Effect.flatMap(Effect.orDie), Effect.map(toSettings))
    )

    /** https (plain http only to allowlisted hosts), never an internal address (the outbound guard). */
    const checkEscalationUrl = (url: string | null | undefined) =>
      typeof url === "string" ? outbound.validateUrl(url, "escalation_webhook_url") : Effect.void

    /** Audited, in a transaction opened once the webhook URL is checked (a DNS lookup of up to 3 s). */
    const updateSettings = Effect.fn("WorkspaceSettings.updateSettings")(
      function* (workspaceId: string, patch: SettingsPatch) {
        const { config: configPatch, ...fields } = patch
        const values: Record<string, unknown> = Object.fromEntries(
          Object.entries(fields).filter(([, v]) => v !== undefined)
        )
        if (configPatch === undefined && Object.keys(values).length === 0) return yield* settingsOf(workspaceId)
        return yield* checkedWrite(checkEscalationUrl(patch.escalation_webhook_url), () =>
          Effect.gen(function* () {
            if (configPatch === undefined) {
              return toSettings(yield* Effect.orDie(yield* repo.updateSettings(workspaceId, values)))
            }
            // config is merged into what is stored: read and written with the row locked, so a concurrent
            // patch of another key is merged into, not overwritten.
            yield* repo.lockSettings(workspaceId)
            const merged = { ...(yield* settingsOf(workspaceId)).config }
            for (const [key, value] of Object.entries(configPatch)) {
              if (value === null) delete merged[key]
              else merged[key] = value
            }
            const stored = JSON.stringify(merged)
            const problem = storedConfigProblem(merged, stored)
            if (problem !== undefined)
              return yield* validationFailed([{ path: ["config", ...problem.path], message: problem.message }])
            return toSettings(
              yield* Effect.orDie(yield* repo.updateSettings(workspaceId, { ...values, config: stored }))
            )
          })
        )
      },
      (effect, workspaceId) => effect.pipe(changed(workspaceId))
    )

    const environment = (workspaceId: string, id: string) =>
      repo.findEnvironment(workspaceId, id).pipe(orFailWith(() => environmentNotFound(id)))

    const listEnvironments = Effect.fn("WorkspaceSettings.listEnvironments")((workspaceId: string) =>
      Effect.map(repo.listEnvironments(workspaceId), (rows) => rows.map(toEnvironment))
    )

    const createEnvironment = Effect.fn("WorkspaceSettings.createEnvironment")(
      function* (
        workspaceId: string,
        input: { readonly name: string; readonly slug: string; readonly description?: string | null | undefined }
      ) {
        const stored = yield* repo.insertEnvironmentWithinCap(
          {
            id: prefixedId("env"),
            workspaceId,
            name: input.name,
            slug: input.slug,
            description: input.description ?? null,
            isDefault: false
          },
          maxEnvironments
        )
        if (Option.isNone(stored)) {
          return yield* capReached(
            "environment_limit_reached",
            maxEnvironments,
            "environments",
            "MAX_ENVIRONMENTS_PER_WORKSPACE"
          )
        }
        if (Option.isNone(stored.value)) {
          return yield* new Conflict({
            code: "environment_slug_taken",
            message: `This workspace already has an environment with slug ${input.slug}.`,
            details: [{ path: "slug", message: "already taken" }]
          })
        }
        return toEnvironment(stored.value.value)
      },
      (effect, workspaceId) => effect.pipe(written(workspaceId))
    )

    const updateEnvironment = Effect.fn("WorkspaceSettings.updateEnvironment")(
      (
        workspaceId: string,
        id: string,
        patch: { readonly name?: string | undefined; readonly description?: string | null | undefined }
      ) =>
        repo
          .updateEnvironment(workspaceId, id, {
            ...(patch.name === undefined ? {} : { name: patch.name }),
            ...(patch.description === undefined ? {} : { description: patch.description })
          })
          .pipe(
            Effect.flatMap(
              Option.match({
                onNone: () => Effect.fail(environmentNotFound(id)),
                onSome: (row) => Effect.succeed(toEnvironment(row))
              })
            ),
            written(workspaceId)
          )
    )

    const deleteEnvironment = Effect.fn("WorkspaceSettings.deleteEnvironment")(
      function* (workspaceId: string, id: string) {
        // Row locked for update: a key being created in it (which shares the lock first) is counted, not cascaded away.
        const found = yield* repo
          .lockEnvironment(workspaceId, id, "update")
          .pipe(orFailWith(() => environmentNotFound(id)))
        if (found.is_default) {
          return yield* new Conflict({
            code: "default_environment",
            message: "The default environment cannot be deleted."
          })
        }
        const keys = yield* repo.activeKeysInEnvironment(workspaceId, id)
        if (keys > 0) {
          return yield* new Conflict({
            code: "environment_in_use",
            message: `${keys} active API key(s) are bound to this environment; revoke them first.`
          })
        }
        yield* repo.deleteEnvironment(workspaceId, id)
      },
      (effect, workspaceId) => effect.pipe(written(workspaceId))
    )

    const checkerModes = Effect.fn("WorkspaceSettings.checkerModes")((workspaceId: string, id: string) =>
      Effect.map(environment(workspaceId, id), toCheckerModes)
    )

    const replaceCheckerModes = Effect.fn("WorkspaceSettings.replaceCheckerModes")(
      (workspaceId: string, id: string, modes: Modes) =>
        repo.replaceCheckerModes(workspaceId, id, modes).pipe(
          Effect.flatMap(
            Option.match({
              onNone: () => Effect.fail(environmentNotFound(id)),
              onSome: (row) => Effect.succeed(toCheckerModes(row))
            })
          ),
          written(workspaceId)
        )
    )

    const readRuntimeConfig = (workspaceId: string): Effect.Effect<RuntimeConfig> =>
      Effect.all({ settings: settingsOf(workspaceId), environments: repo.listEnvironments(workspaceId) }).pipe(
        Effect.map(({ environments, settings }) => ({
          settings,
          environments: new Map(
            environments.map((row) => [
              row.id,
              { slug: row.slug, isDefault: row.is_default, modes: toCheckerModes(row) }
            ])
          )
        }))
      )

    /** What hot paths need of a workspace: its settings and its environments with overrides (cached). */
    const runtimeConfig = Effect.fn("WorkspaceSettings.runtimeConfig")((workspaceId: string) =>
      runtimeCache.get(workspaceId, readRuntimeConfig(workspaceId))
    )

    /** The same read from the database (and cached anew): for a caller that found something missing in the cached copy. */
    const reloadRuntimeConfig = Effect.fn("WorkspaceSettings.reloadRuntimeConfig")((workspaceId: string) =>
      runtimeCache.reload(workspaceId, readRuntimeConfig(workspaceId))
    )

    /** `runtimeConfig` from the cache alone (undefined when not cached). */
    const peekRuntimeConfig = (workspaceId: string) => runtimeCache.peek(workspaceId)

    /** The workspace's data_handling_mode (cached): how content a write keeps is kept (src/privacy). */
    const dataHandlingMode = (workspaceId: string) =>
      Effect.map(runtimeConfig(workspaceId), (config) => config.settings.data_handling_mode)

    return {
      runtimeConfig,
      dataHandlingMode,
      peekRuntimeConfig,
      reloadRuntimeConfig,
      settingsOf,
      updateSettings,
      listEnvironments,
      createEnvironment,
      updateEnvironment,
      deleteEnvironment,
      checkerModes,
      replaceCheckerModes
    }
  }),
  dependencies: [SettingsRepo.Default, OutboundGuard.Default]
}) {}
