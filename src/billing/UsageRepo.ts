/** SQL of LLM usage records. Every read takes the workspace id. */
import { SqlClient } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { instantOf } from "../platform/Schemas.js"
import { dieOnErrors } from "../platform/Sql.js"
import type { LlmUsageMessage } from "./Domain.js"

/** A usage record; the bigint and numeric columns are selected as text. */
const UsageRow = Schema.Struct({
  id: Schema.String,
  workspace_id: Schema.String,
  api_key_id: Schema.NullOr(Schema.String),
  principal_id: Schema.NullOr(Schema.String),
  agent_id: Schema.NullOr(Schema.String),
  request_id: Schema.String,
  kind: Schema.String,
  model: Schema.String,
  prompt_tokens: Schema.String,
  completion_tokens: Schema.String,
  currency: Schema.String,
  cost_minor: Schema.String,
  cost_usd_nanos: Schema.String,
  unpriced: Schema.Boolean,
  effective_at: Schema.DateFromSelf,
  metadata: Schema.Unknown
})
export type UsageRow = typeof UsageRow.Type

/** Sums of one bucket, as text. */
const GroupRow = Schema.Struct({
  key: Schema.NullOr(Schema.String),
  event_count: Schema.String,
  prompt_tokens: Schema.String,
  completion_tokens: Schema.String,
  cost_minor: Schema.String,
  cost_usd_nanos: Schema.String
})
export type GroupRow = typeof GroupRow.Type

const decodeIds = Schema.decodeUnknown(Schema.Array(Schema.Struct({ id: Schema.String })))
const decodeUsages = Schema.decodeUnknown(Schema.Array(UsageRow))
const decodeGroups = Schema.decodeUnknown(Schema.Array(GroupRow))

export interface UsageFilters {
  readonly principal_id?: string | undefined
  readonly model?: string | undefined
  readonly kind?: string | undefined
  readonly start?: string | undefined
  readonly end?: string | undefined
}

export type GroupBy = "day" | "principal" | "agent" | "model"

export class UsageRepo extends Effect.Service<UsageRepo>()("billing/UsageRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const where = (workspaceId: string, filters: UsageFilters) =>
      sql.and([
        sql`workspace_id = ${workspaceId}`,
        ...(filters.principal_id === undefined ? [] : [sql`principal_id = ${filters.principal_id}`]),
        ...(filters.model === undefined ? [] : [sql`model = ${filters.model}`]),
        ...(filters.kind === undefined ? [] : [sql`kind = ${filters.kind}`]),
        ...(filters.start === undefined ? [] : [sql`effective_at >= ${instantOf(filters.start)}`]),
        ...(filters.end === undefined ? [] : [sql`effective_at < ${instantOf(filters.end)}`])
      ])

    const groupKey = (groupBy: GroupBy) =>
      groupBy === "day"
        ? sql`to_char(effective_at at time zone 'UTC', 'YYYY-MM-DD')`
        : groupBy === "principal"
          ? sql`principal_id`
          : groupBy === "agent"
            ? sql`agent_id`
            : sql`model`

    return dieOnErrors({
      /** Stores the records whose ids are not stored yet, in one statement; answers the ids that were new. */
      insertNew: (usages: ReadonlyArray<LlmUsageMessage>) =>
        usages.length === 0
          ? Effect.succeed(new Set<string>())
          : sql`
          insert into llm_usage_events ${sql.insert(
            usages.map((usage) => ({
              id: usage.id,
              workspace_id: usage.workspace_id,
              api_key_id: usage.api_key_id,
              principal_id: usage.principal_id,
              agent_id: usage.agent_id,
              request_id: usage.request_id,
              kind: usage.kind,
              model: usage.model,
              prompt_tokens: usage.prompt_tokens,
              completion_tokens: usage.completion_tokens,
              currency: usage.currency,
              cost_minor: usage.cost_minor,
              cost_usd_nanos: usage.cost_usd_nanos,
              unpriced: usage.unpriced,
              effective_at: usage.effective_at,
              metadata: JSON.stringify(usage.metadata ?? null)
            }))
          )}
          on conflict (id) do nothing returning id`.pipe(
              Effect.flatMap(decodeIds),
              Effect.map((rows) => new Set(rows.map((row) => row.id)))
            ),

      /** Newest first, `limit + 1` rows after the (effective_at, id) cursor. */
      list: (
        workspaceId: string,
        filters: UsageFilters,
        limit: number,
        after: Option.Option<{ readonly at: string; readonly id: string }>
      ) =>
        sql`
          select id, workspace_id, api_key_id, principal_id, agent_id, request_id, kind, model,
                 prompt_tokens::text, completion_tokens::text, currency, cost_minor::text,
                 cost_usd_nanos::text, unpriced, effective_at, metadata
          from llm_usage_events
          where ${where(workspaceId, filters)}
          ${Option.match(after, {
            onNone: () => sql``,
            onSome: ({ at, id }) => sql`and (effective_at, id) < (${at}::timestamptz, ${id})`
          })}
          order by effective_at desc, id desc
          limit ${limit + 1}`.pipe(Effect.flatMap(decodeUsages)),

      /** Sums per bucket, in key order (days chronologically); at most `limit` buckets. */
      groups: (workspaceId: string, filters: UsageFilters, groupBy: GroupBy, limit: number) =>
        sql`
          select ${groupKey(groupBy)} as key,
                 count(*)::text as event_count,
                 coalesce(sum(prompt_tokens), 0)::text as prompt_tokens,
                 coalesce(sum(completion_tokens), 0)::text as completion_tokens,
                 coalesce(sum(cost_minor), 0)::text as cost_minor,
                 coalesce(sum(cost_usd_nanos), 0)::text as cost_usd_nanos
          from llm_usage_events
          where ${where(workspaceId, filters)}
          group by 1
          order by 1 asc nulls last
          limit ${limit}`.pipe(Effect.flatMap(decodeGroups))
    })
  })
}) {}
