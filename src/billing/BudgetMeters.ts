/**
 * Budget meters and alert firings. Each metered event adds to running
 * totals per UTC window (day and month; the whole workspace and the event's
 * principal), then every enabled config of that meter whose total reached its
 * threshold fires, at most once per config and window (a unique constraint).
 * A firing is stored and published on `budget-firings` in the same
 * transaction as the totals, which the effect-once consumer also commits.
 *
 * Meters: `llm_spend` (cost_minor of llm-usage events; principal = the usage
 * principal) and `actions` (one per authorization decision; principal = the
 * decision's agent id). Percent thresholds are of the workspace cap:
 * `config.llm_budget.cap_minor` and `config.action_budget.cap` in settings;
 * without a cap a percent config does not fire.
 */
import { Effect, Layer, Schema } from "effect"
import { WorkspaceSettings } from "../identity/WorkspaceSettings.js"
import { consumeStream, decodeDelivery } from "../platform/Consumer.js"
import { prefixedId } from "../platform/Ids.js"
import { Outbox } from "../platform/Outbox.js"
import { toTimestamp } from "../platform/Schemas.js"
import { Topics } from "../platform/Topics.js"
import { AlertsRepo, type ConfigRow } from "./AlertsRepo.js"
import { type BudgetFiringMessage, exactInt } from "./Domain.js"
import { allWindows, type BudgetWindowName, windowEnd, windowStart } from "./Windows.js"

export type MeterName = "llm_spend" | "actions"

export interface Metered {
  readonly workspaceId: string
  readonly meter: MeterName
  readonly principalId: string | null
  readonly at: Date
  readonly amount: number
  /** Currency of llm_spend amounts. */
  readonly currency?: string | undefined
  /** The events a summed group was made of, in order (their amounts add up to `amount`). */
  readonly parts?: ReadonlyArray<number> | undefined
}

/**
 * The total at the event that crossed `threshold`: the running total before
 * the group plus its events one by one, so a firing reports the same spend
 * however the events were batched.
 */
const totalAtCrossing = (after: number, event: Metered, threshold: number) => {
  let running = after - event.amount
  for (const part of event.parts ?? [event.amount]) {
    running += part
    if (running >= threshold) return running
  }
  return after
}

const positiveInt = (value: unknown): number | undefined =>
  typeof value === "number" && Number.isSafeInteger(value) && value > 0 ? value : undefined

/** The workspace cap a percent threshold is relative to, from settings `config`. */
const capOf = (config: Record<string, unknown>, meter: MeterName) => {
  const entry = config[meter === "llm_spend" ? "llm_budget" : "action_budget"]
  if (typeof entry !== "object" || entry === null) return undefined
  const record = entry as Record<string, unknown>
  const cap = positiveInt(record[meter === "llm_spend" ? "cap_minor" : "cap"])
  return cap === undefined
    ? undefined
    : { cap, currency: typeof record["currency"] === "string" ? record["currency"] : undefined }
}

export class BudgetMeters extends Effect.Service<BudgetMeters>()("billing/BudgetMeters", {
  effect: Effect.gen(function* () {
    const repo = yield* AlertsRepo
    const outbox = yield* Outbox
    const settings = yield* WorkspaceSettings

    const fire = (config: ConfigRow, event: Metered, spent: number, cap: number | undefined, threshold: number) =>
      Effect.gen(function* () {
        const window = config.time_window as BudgetWindowName
        const start = windowStart(window, event.at)
        const firing = {
          id: prefixedId("bfr"),
          config_id: config.id,
          workspace_id: event.workspaceId,
          principal_id: config.principal_id,
          meter: event.meter,
          currency: event.meter === "actions" ? "actions" : (event.currency ?? "usd"),
          cap_minor: exactInt(cap ?? threshold),
          spent_minor: exactInt(spent),
          time_window: window,
          window_start: start,
          threshold_amount: exactInt(threshold),
          fired_at: new Date(),
          payload: {
            config_name: config.name,
            threshold_type: config.threshold_type,
            threshold_value: Number(config.threshold_value),
            threshold_amount: threshold,
            window,
            window_end: toTimestamp(windowEnd(window, event.at))
          }
        }
        if (!(yield* repo.insertFiring(firing))) return
        const message: BudgetFiringMessage = {
          schema_version: 1,
          id: firing.id,
          config_id: config.id as BudgetFiringMessage["config_id"],
          workspace_id: firing.workspace_id,
          principal_id: firing.principal_id,
          meter: firing.meter,
          currency: firing.currency,
          cap_minor: firing.cap_minor,
          spent_minor: firing.spent_minor,
          window_start: toTimestamp(start),
          fired_at: toTimestamp(firing.fired_at),
          payload: firing.payload
        }
        yield* outbox.enqueue([{ topic: Topics.budgetFirings, key: firing.workspace_id, value: message }])
      })

    /** Adds one metered event (or the sum of several with the same windows); inside the consumer's transaction. */
    const addOne = (event: Metered) =>
      Effect.gen(function* () {
        if (event.amount <= 0) return
        // '' is the whole workspace's row: an empty principal (both topics' Schemas allow one) counts there once.
        // Named twice, the upsert touched one row twice, which PostgreSQL refuses (and the partition was held).
        const scopes = event.principalId === null || event.principalId === "" ? [""] : ["", event.principalId]
        const totals = yield* repo.addToTotals(
          allWindows.flatMap((window) =>
            scopes.map((principal) => ({
              workspace_id: event.workspaceId,
              meter: event.meter,
              time_window: window,
              window_start: windowStart(window, event.at),
              principal_id: principal,
              amount: event.amount
            }))
          )
        )
        const configs = yield* repo.matchingConfigs(event.workspaceId, event.meter, event.principalId)
        if (configs.length === 0) return
        const workspaceCap = capOf((yield* settings.runtimeConfig(event.workspaceId)).settings.config, event.meter)
        for (const config of configs) {
          const total = totals.find(
            (row) => row.time_window === config.time_window && row.principal_id === (config.principal_id ?? "")
          )
          if (total === undefined) continue
          const value = Number(config.threshold_value)
          const threshold =
            config.threshold_type === "absolute"
              ? value
              : workspaceCap === undefined
                ? undefined
                : Math.ceil((workspaceCap.cap * value) / 100)
          if (threshold === undefined || Number(total.amount) < threshold) continue
          yield* fire(
            config,
            { ...event, currency: event.currency ?? workspaceCap?.currency },
            totalAtCrossing(Number(total.amount), event, threshold),
            workspaceCap?.cap,
            threshold
          )
        }
      })

    /**
     * Adds a consumer batch's events: those with the same workspace, meter,
     * principal, currency and windows are summed first, so a batch costs two
     * statements per group instead of per event. A threshold crossed inside
     * the batch fires once, with the total at the crossing event as
     * `spent_minor`.
     */
    const addAll = Effect.fn("BudgetMeters.addAll")(function* (events: Iterable<Metered>) {
      const groups = new Map<string, Metered & { readonly parts: Array<number> }>()
      for (const event of events) {
        if (event.amount <= 0) continue
        const windows = allWindows.map((window) => windowStart(window, event.at).getTime())
        const key = [event.workspaceId, event.meter, event.principalId ?? "", event.currency ?? "", ...windows].join(
          "|"
        )
        const group = groups.get(key)
        if (group === undefined) groups.set(key, { ...event, parts: [event.amount] })
        else {
          group.parts.push(event.amount)
          groups.set(key, {
            ...event,
            amount: group.amount + event.amount,
            at: event.at > group.at ? event.at : group.at,
            parts: group.parts
          })
        }
      }
      for (const group of groups.values()) yield* addOne(group)
    })

    return { addAll }
  }),
  dependencies: [AlertsRepo.Default]
}) {}

const DecisionEvent = Schema.Struct({ workspace_id: Schema.String, agent_id: Schema.String, decided_at: Schema.String })
const decodeDecision = decodeDelivery(DecisionEvent)

/** The `actions` meter: one per authorization decision on the `decisions` topic. */
export const ActionMeterLive = Layer.scopedDiscard(
  Effect.gen(function* () {
    const meters = yield* BudgetMeters
    yield* consumeStream({
      group: "budget-actions",
      topics: [Topics.decisions],
      apply: (batch) =>
        Effect.gen(function* () {
          const events: Array<Metered> = []
          for (const delivery of batch) {
            // A message that does not decode is dead-lettered with the reason (Consumer.ts).
            const decision = yield* decodeDecision(delivery)
            const at = new Date(decision.decided_at)
            if (Number.isNaN(at.getTime())) continue
            events.push({
              workspaceId: decision.workspace_id,
              meter: "actions",
              principalId: decision.agent_id,
              at,
              amount: 1
            })
          }
          yield* meters.addAll(events)
        })
    }).pipe(Effect.forkScoped)
  })
)
