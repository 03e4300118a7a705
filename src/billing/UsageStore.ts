/**
 * LLM usage: the `llm-usage` consumer that stores each record once (the
 * record id is the primary key, and the effect-once consumer dedupes
 * redelivered messages) and feeds the `llm_spend` budget meter with records
 * seen for the first time; and the queries behind `GET /v1/llm-usage`.
 */
import { Effect, Layer } from "effect"
import { pageByTime } from "../platform/Cursor.js"
import { BadRequest } from "../http/Errors.js"
import { toTimestamp } from "../platform/Schemas.js"
import { Topics } from "../platform/Topics.js"
import { consumeStream, decodeDelivery } from "../platform/Consumer.js"
import { BudgetMeters, type Metered } from "./BudgetMeters.js"
import { exactInt, LlmUsageMessage } from "./Domain.js"
import { type GroupBy, type UsageFilters, UsageRepo, type UsageRow } from "./UsageRepo.js"

const decodeUsage = decodeDelivery(LlmUsageMessage)

const toRecord = (row: UsageRow) => ({
  id: row.id,
  workspace_id: row.workspace_id,
  api_key_id: row.api_key_id,
  principal_id: row.principal_id,
  agent_id: row.agent_id,
  request_id: row.request_id,
  kind: row.kind as "customer_inference" | "guardrail",
  model: row.model,
  prompt_tokens: Number(row.prompt_tokens),
  completion_tokens: Number(row.completion_tokens),
  currency: row.currency,
  cost_minor: Number(row.cost_minor),
  cost_usd_nanos: row.cost_usd_nanos,
  unpriced: row.unpriced,
  effective_at: toTimestamp(row.effective_at),
  metadata: row.metadata
})

/** Most buckets a `group_by` answers: past it the query is a 400 to narrow (as analytics' MAX_QUERY_POINTS). */
export const MAX_USAGE_GROUPS = 10_000

export interface UsageQuery extends UsageFilters {
  readonly group_by?: GroupBy | undefined
}

export class LlmUsage extends Effect.Service<LlmUsage>()("billing/LlmUsage", {
  effect: Effect.gen(function* () {
    const repo = yield* UsageRepo

    const list = Effect.fn("LlmUsage.list")(function* (
      workspaceId: string,
      query: UsageQuery,
      limit: number,
      cursor: string | undefined
    ) {
      // RFC 3339 allows lowercase t/z; PostgreSQL wants them upper case.
      const filters = {
        ...query,
        start: query.start?.toUpperCase(),
        end: query.end?.toUpperCase()
      }
      if (
        filters.start !== undefined &&
        filters.end !== undefined &&
        Date.parse(filters.start) > Date.parse(filters.end)
      ) {
        return yield* new BadRequest({
          code: "validation_failed",
          message: "end: must not be before start.",
          details: [{ path: "end", message: "must not be before start" }]
        })
      }
      if (query.group_by !== undefined) {
        const groups = yield* repo.groups(workspaceId, filters, query.group_by, MAX_USAGE_GROUPS + 1)
        if (groups.length > MAX_USAGE_GROUPS) {
          const message = `more than ${MAX_USAGE_GROUPS} groups; narrow start and end, filter, or group by less`
          return yield* new BadRequest({
            code: "validation_failed",
            message: `group_by: ${message}`,
            details: [{ path: "group_by", message }]
          })
        }
        return {
          group_by: query.group_by,
          groups: groups.map((row) => ({
            key: row.key,
            event_count: exactInt(row.event_count),
            prompt_tokens: exactInt(row.prompt_tokens),
            completion_tokens: exactInt(row.completion_tokens),
            cost_minor: exactInt(row.cost_minor),
            cost_usd_nanos: row.cost_usd_nanos
          }))
        }
      }
      const { next, page } = yield* pageByTime(cursor, limit, (after) =>
        Effect.map(repo.list(workspaceId, filters, limit, after), (rows) =>
          rows.map((row) => ({ ...row, created_at: row.effective_at }))
        )
      )
      return { events: page.map(toRecord), ...next }
    })

    return { list }
  }),
  dependencies: [UsageRepo.Default]
}) {}

/** Stores every llm-usage message once; a record new to the store is metered for budget alerts. */
export const UsageStoreLive = Layer.scopedDiscard(
  Effect.gen(function* () {
    const repo = yield* UsageRepo
    const meters = yield* BudgetMeters
    // A batch's records go in with one statement; the ones new to the store are metered together.
    yield* consumeStream({
      group: "llm-usage-store",
      topics: [Topics.llmUsage],
      apply: (batch) =>
        Effect.gen(function* () {
          const usages: Array<LlmUsageMessage> = []
          for (const delivery of batch) {
            // A message that does not decode is dead-lettered with the reason (Consumer.ts).
            const usage = yield* decodeUsage(delivery)
            if (Number.isNaN(new Date(usage.effective_at).getTime())) {
              yield* Effect.logWarning("llm-usage message without a valid effective_at; skipped").pipe(
                Effect.annotateLogs({ event_id: delivery.eventId })
              )
            } else usages.push(usage)
          }
          // An id twice in one batch (a duplicate publish) is stored, and metered, once.
          const unique = [...new Map(usages.map((usage) => [usage.id, usage])).values()]
          const fresh = yield* repo.insertNew(unique)
          yield* meters.addAll(
            unique
              .filter((usage) => fresh.has(usage.id))
              .map((usage): Metered => ({
                workspaceId: usage.workspace_id,
                meter: "llm_spend",
                principalId: usage.principal_id,
                at: new Date(usage.effective_at),
                amount: usage.cost_minor,
                currency: usage.currency
              }))
          )
        })
    }).pipe(Effect.forkScoped)
  })
)
