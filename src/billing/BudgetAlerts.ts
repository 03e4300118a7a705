/**
 * Budget alert configs (CRUD) and their firings and webhook deliveries.
 * `principal_id` and `webhook_url` narrow a config and cannot be cleared by
 * PATCH (recreate the config to widen it). The webhook signing secret is
 * derived (see Webhooks.ts) and shown only in the create response.
 */
import { Effect, Option, Redacted } from "effect"
import { auditedWrites, checkedWrites } from "../audit/Chain.js"
import { AppConfig } from "../platform/Config.js"
import { BadRequest, NotFound } from "../http/Errors.js"
import { prefixedId, randomToken } from "../platform/Ids.js"
import { OutboundGuard } from "../platform/OutboundGuard.js"
import { pageByTimeOf } from "../platform/Cursor.js"
import { pageSize, toTimestamp, toTimestampOrNull } from "../platform/Schemas.js"
import { Secrets } from "../platform/Secrets.js"
import { orFailWith } from "../platform/Sql.js"
import { AlertsRepo, type ConfigChanges, type ConfigRow, type FiringRow } from "./AlertsRepo.js"
import { BudgetAlertId, type CreateBudgetAlert, exactInt, type UpdateBudgetAlert } from "./Domain.js"
import { DeliveryRepo } from "./DeliveryRepo.js"
import { capReached } from "../platform/WorkspaceCaps.js"
import { deriveWebhookSecret } from "./Webhooks.js"

type Meter = "llm_spend" | "actions"

export const toConfig = (row: ConfigRow) => ({
  id: BudgetAlertId.make(row.id),
  workspace_id: row.workspace_id,
  name: row.name,
  meter: row.meter as Meter,
  threshold_type: row.threshold_type as "percent" | "absolute",
  threshold_value: Number(row.threshold_value),
  window: row.time_window as "day" | "month",
  enabled: row.enabled,
  principal_id: row.principal_id,
  webhook_url: row.webhook_url,
  created_at: toTimestamp(row.created_at),
  updated_at: toTimestamp(row.updated_at)
})

/** The most firings a page lists: a config fires once per window (and amount), for as long as it exists. */
export const MAX_FIRINGS_PAGE = 200

/** Firings are keyed by when each fired. */
const pageFirings = pageByTimeOf((row: FiringRow) => row.fired_at)

const toFiring = (row: FiringRow) => ({
  id: row.id,
  config_id: BudgetAlertId.make(row.config_id),
  workspace_id: row.workspace_id,
  principal_id: row.principal_id,
  meter: row.meter as Meter,
  currency: row.currency,
  cap_minor: exactInt(row.cap_minor),
  spent_minor: exactInt(row.spent_minor),
  window_start: toTimestamp(row.window_start),
  fired_at: toTimestamp(row.fired_at),
  payload: row.payload
})

const alertNotFound = (id: string) =>
  new NotFound({ code: "budget_alert_not_found", message: `No budget alert ${id} in this workspace.` })

const cannotClear = (field: "principal_id" | "webhook_url") =>
  new BadRequest({
    code: "validation_failed",
    message: `${field} cannot be cleared; delete this budget alert and create a new one without it to widen its scope.`,
    details: [{ path: field, message: "cannot be cleared; recreate the budget alert" }]
  })

export class BudgetAlerts extends Effect.Service<BudgetAlerts>()("billing/BudgetAlerts", {
  effect: Effect.gen(function* () {
    const repo = yield* AlertsRepo
    const deliveries = yield* DeliveryRepo
    const outbound = yield* OutboundGuard
    const serviceSecret = Redacted.value((yield* Secrets).jwtSecret)
    const maxConfigs = (yield* AppConfig).maxBudgetAlertsPerWorkspace
    // Writes run in a transaction attributed to the caller (the audit chain), opened only once the input is
    // checked (the webhook URL's check may wait seconds on DNS).
    const write = yield* auditedWrites
    const checkedWrite = yield* checkedWrites

    /** https (plain http only to allowlisted hosts), never an internal address (the outbound guard). */
    const checkWebhookUrl = (url: string | undefined) =>
      url === undefined ? Effect.void : outbound.validateUrl(url, "webhook_url")

    const checkPrincipal = (principal: string | undefined) =>
      principal === undefined || principal.trim().length > 0
        ? Effect.void
        : Effect.fail(
            new BadRequest({
              code: "validation_failed",
              message: "principal_id: must not be blank.",
              details: [{ path: "principal_id", message: "must not be blank" }]
            })
          )

    const find = (workspaceId: string, id: string) =>
      repo.findConfig(workspaceId, id).pipe(orFailWith(() => alertNotFound(id)))

    const list = Effect.fn("BudgetAlerts.list")(function* (workspaceId: string) {
      return (yield* repo.listConfigs(workspaceId)).map(toConfig)
    })

    const create = Effect.fn("BudgetAlerts.create")(function* (
      workspaceId: string,
      input: typeof CreateBudgetAlert.Type
    ) {
      const inserted = yield* checkedWrite(
        Effect.zipRight(checkWebhookUrl(input.webhook_url), checkPrincipal(input.principal_id)),
        () =>
          repo.insertConfig(
            {
              id: prefixedId("bal"),
              workspace_id: workspaceId,
              name: input.name,
              meter: input.meter ?? "llm_spend",
              threshold_type: input.threshold_type,
              threshold_value: input.threshold_value,
              time_window: input.window,
              enabled: input.enabled ?? true,
              principal_id: input.principal_id ?? null,
              webhook_url: input.webhook_url ?? null,
              secret_salt: randomToken(16)
            },
            maxConfigs
          )
      )
      if (Option.isNone(inserted)) {
        return yield* capReached(
          "budget_alert_limit_reached",
          maxConfigs,
          "budget alerts",
          "MAX_BUDGET_ALERTS_PER_WORKSPACE"
        )
      }
      const row = inserted.value
      return { ...toConfig(row), webhook_secret: deriveWebhookSecret(serviceSecret, row.id, row.secret_salt) }
    })

    const update = Effect.fn("BudgetAlerts.update")(function* (
      workspaceId: string,
      id: string,
      patch: typeof UpdateBudgetAlert.Type
    ) {
      if (patch.principal_id === null) return yield* cannotClear("principal_id")
      if (patch.webhook_url === null) return yield* cannotClear("webhook_url")
      const checks = Effect.zipRight(checkWebhookUrl(patch.webhook_url), checkPrincipal(patch.principal_id))
      const changes: ConfigChanges = {
        ...(patch.name === undefined ? {} : { name: patch.name }),
        ...(patch.meter === undefined ? {} : { meter: patch.meter }),
        ...(patch.threshold_type === undefined ? {} : { threshold_type: patch.threshold_type }),
        ...(patch.threshold_value === undefined ? {} : { threshold_value: patch.threshold_value }),
        ...(patch.window === undefined ? {} : { time_window: patch.window }),
        ...(patch.enabled === undefined ? {} : { enabled: patch.enabled }),
        ...(patch.principal_id === undefined ? {} : { principal_id: patch.principal_id }),
        ...(patch.webhook_url === undefined ? {} : { webhook_url: patch.webhook_url })
      }
      if (Object.keys(changes).length === 0) return toConfig(yield* find(workspaceId, id))
      return toConfig(
        yield* checkedWrite(checks, () => repo.updateConfig(workspaceId, id, changes)).pipe(
          orFailWith(() => alertNotFound(id))
        )
      )
    })

    const remove = Effect.fn("BudgetAlerts.remove")(function* (workspaceId: string, id: string) {
      if (!(yield* write(repo.deleteConfig(workspaceId, id)))) return yield* alertNotFound(id)
    })

    const firings = Effect.fn("BudgetAlerts.firings")(function* (
      workspaceId: string,
      id: string,
      query: { readonly limit?: number | undefined; readonly cursor?: string | undefined }
    ) {
      yield* find(workspaceId, id)
      const limit = pageSize(query.limit, MAX_FIRINGS_PAGE)
      const { next, page } = yield* pageFirings(query.cursor, limit, (after) =>
        repo.listFirings(workspaceId, id, limit, after)
      )
      return { firings: page.map(toFiring), ...next }
    })

    const deliveriesOf = Effect.fn("BudgetAlerts.deliveries")(function* (workspaceId: string, id: string) {
      yield* find(workspaceId, id)
      const rows = yield* deliveries.listForConfig(workspaceId, id)
      const attempts = yield* deliveries.attemptsOf(rows.map((row) => row.id))
      return {
        deliveries: rows.map((row) => ({
          id: row.id,
          firing_id: row.firing_id,
          url: row.url,
          status: row.status as "pending" | "succeeded" | "failed",
          attempt_count: row.attempt_count,
          next_attempt_at: row.status === "pending" ? toTimestampOrNull(row.next_attempt_at) : null,
          created_at: toTimestamp(row.created_at),
          updated_at: toTimestamp(row.updated_at),
          attempts: attempts
            .filter((attempt) => attempt.delivery_id === row.id)
            .map((attempt) => ({
              attempt: attempt.attempt,
              attempted_at: toTimestamp(attempt.attempted_at),
              duration_ms: attempt.duration_ms,
              response_status: attempt.response_status,
              error: attempt.error,
              succeeded: attempt.succeeded
            }))
        }))
      }
    })

    return { list, create, update, remove, firings, deliveries: deliveriesOf }
  }),
  dependencies: [AlertsRepo.Default, DeliveryRepo.Default, OutboundGuard.Default]
}) {}
