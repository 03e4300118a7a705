/**
 * SQL of decision traces and their review events, rows decoded by Schema.
 * Every query takes the workspace id. A batch of traces is inserted as a
 * statement the decision group commit embeds in its own.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { dieOnErrors } from "../platform/Sql.js"
import { ReviewOutcome, RunKind } from "./Domain.js"

export interface NewTrace {
  readonly id: string
  readonly workspaceId: string
  readonly agentId: string
  readonly environmentId: string
  readonly environment: string
  readonly runId: string | null
  readonly runEventId: string | null
  readonly sessionId: string | null
  readonly intentId: string
  readonly receiptId: string
  readonly decision: string
  readonly domain: string
  readonly elapsedMs: number
  readonly payload: unknown
}

export const TraceRow = Schema.Struct({
  id: Schema.String,
  run_id: Schema.NullOr(Schema.String),
  run_event_id: Schema.NullOr(Schema.String),
  session_id: Schema.NullOr(Schema.String),
  decision: Schema.String,
  domain: Schema.String,
  environment: Schema.String,
  environment_id: Schema.String,
  elapsed_ms: Schema.Number,
  latest_review_outcome: Schema.NullOr(ReviewOutcome),
  latest_reviewed_at: Schema.NullOr(Schema.DateFromSelf),
  created_at: Schema.DateFromSelf,
  payload: Schema.Unknown
})
export type TraceRow = typeof TraceRow.Type

/** What a review needs of its trace. */
const TraceLink = Schema.Struct({
  id: Schema.String,
  run_id: Schema.NullOr(Schema.String),
  run_event_id: Schema.NullOr(Schema.String)
})

const decodeTraces = Schema.decodeUnknown(Schema.Array(TraceRow))

export interface TraceFilters {
  readonly traceId?: string | undefined
  readonly sessionId?: string | undefined
  readonly runId?: string | undefined
  readonly agentId?: string | undefined
  readonly effect?: string | undefined
}

export const ReviewRow = Schema.Struct({
  id: Schema.String,
  trace_id: Schema.String,
  workspace_id: Schema.String,
  run_id: Schema.NullOr(Schema.String),
  run_event_id: Schema.NullOr(Schema.String),
  reviewer_id: Schema.String,
  outcome: ReviewOutcome,
  /** jsonb: an array of strings. */
  reason_codes: Schema.Array(Schema.String),
  note: Schema.NullOr(Schema.String),
  metadata: Schema.Unknown,
  created_at: Schema.DateFromSelf
})
export type ReviewRow = typeof ReviewRow.Type

/** What human-review analytics groups a review by (`policy_ids` is a jsonb array). */
const AnalyticsContextRow = Schema.Struct({
  agent_id: Schema.NullOr(Schema.String),
  environment_id: Schema.NullOr(Schema.String),
  run_kind: Schema.NullOr(RunKind),
  policy_ids: Schema.NullOr(Schema.Array(Schema.String)),
  workflow_step: Schema.NullOr(Schema.String)
})

const decodeReviews = Schema.decodeUnknown(Schema.Array(ReviewRow))

export class TraceRepo extends Effect.Service<TraceRepo>()("runs/TraceRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    /** The insert of a batch (at least one) as a statement, to run alone or as part of another. */
    const insertStatement = (batch: ReadonlyArray<NewTrace>) =>
      sql`insert into traces ${sql.insert(
        batch.map((trace) => ({
          id: trace.id,
          workspace_id: trace.workspaceId,
          agent_id: trace.agentId,
          environment_id: trace.environmentId,
          environment: trace.environment,
          run_id: trace.runId,
          run_event_id: trace.runEventId,
          session_id: trace.sessionId,
          intent_id: trace.intentId,
          receipt_id: trace.receiptId,
          decision: trace.decision,
          domain: trace.domain,
          elapsed_ms: trace.elapsedMs,
          payload: JSON.stringify(trace.payload)
        }))
      )}`
    const findTrace = SqlSchema.findOne({
      Request: Schema.Struct({ workspaceId: Schema.String, id: Schema.String }),
      Result: TraceLink,
      execute: ({ id, workspaceId }) =>
        sql`select id, run_id, run_event_id from traces where workspace_id = ${workspaceId} and id = ${id}`
    })
    const insertReview = SqlSchema.single({
      Request: ReviewRow.pipe(Schema.omit("created_at")),
      Result: ReviewRow,
      execute: (row) =>
        sql`insert into review_events (id, trace_id, workspace_id, run_id, run_event_id, reviewer_id, outcome,
                                       reason_codes, note, metadata)
            values (${row.id}, ${row.trace_id}, ${row.workspace_id}, ${row.run_id}, ${row.run_event_id}, ${row.reviewer_id},
                    ${row.outcome}, ${JSON.stringify(row.reason_codes)}, ${row.note}, ${JSON.stringify(row.metadata ?? null)})
            returning *`
    })
    const findAnalyticsContext = SqlSchema.findOne({
      Request: Schema.Struct({ workspaceId: Schema.String, traceId: Schema.String }),
      Result: AnalyticsContextRow,
      execute: ({ traceId, workspaceId }) =>
        sql`select t.agent_id, t.environment_id, r.kind as run_kind,
                   (select coalesce(jsonb_agg(f->>'policy_id'), '[]'::jsonb)
                      from jsonb_array_elements(case when jsonb_typeof(t.payload->'response'->'findings') = 'array'
                                                     then t.payload->'response'->'findings' else '[]'::jsonb end) f
                     where jsonb_typeof(f->'policy_id') = 'string') as policy_ids,
                   case when jsonb_typeof(t.payload->'request'->'metadata'->'workflow_step') = 'string'
                        then t.payload->'request'->'metadata'->>'workflow_step' end as workflow_step
              from traces t left join runs r on r.workspace_id = t.workspace_id and r.id = t.run_id
             where t.workspace_id = ${workspaceId} and t.id = ${traceId}`
    })

    return {
      insertStatement,
      ...dieOnErrors({
        listTraces: (
          workspaceId: string,
          filters: TraceFilters,
          limit: number,
          after: Option.Option<{ at: string; id: string }>
        ) =>
          sql`select id, run_id, run_event_id, session_id, decision, domain, environment, environment_id, elapsed_ms,
                             latest_review_outcome, latest_reviewed_at, created_at, payload
                      from traces where workspace_id = ${workspaceId}
                      ${filters.traceId === undefined ? sql`` : sql`and id = ${filters.traceId}`}
                      ${filters.sessionId === undefined ? sql`` : sql`and session_id = ${filters.sessionId}`}
                      ${filters.runId === undefined ? sql`` : sql`and run_id = ${filters.runId}`}
                      ${filters.agentId === undefined ? sql`` : sql`and agent_id = ${filters.agentId}`}
                      ${filters.effect === undefined ? sql`` : sql`and decision = ${filters.effect}`}
                      ${Option.isNone(after) ? sql`` : sql`and (created_at, id) < (${after.value.at}::timestamptz, ${after.value.id})`}
                      order by created_at desc, id desc limit ${limit + 1}`.pipe(Effect.flatMap(decodeTraces)),
        find: (workspaceId: string, id: string) => findTrace({ workspaceId, id }),
        setLatestReview: (workspaceId: string, id: string, outcome: string, at: Date) =>
          sql`update traces set latest_review_outcome = ${outcome}, latest_reviewed_at = ${at}
            where workspace_id = ${workspaceId} and id = ${id}`,
        insertReview: (row: Omit<ReviewRow, "created_at">) => insertReview(row),
        /** What human-review analytics groups a review by, carried on the topic so analytics never reads traces. */
        analyticsContext: (workspaceId: string, traceId: string) =>
          findAnalyticsContext({ workspaceId, traceId }).pipe(
            Effect.map(Option.getOrUndefined),
            Effect.map((row) => ({
              agent_id: row?.agent_id ?? null,
              environment_id: row?.environment_id ?? null,
              run_kind: row?.run_kind ?? null,
              policy_ids: row?.policy_ids ?? [],
              workflow_step: row?.workflow_step ?? null
            }))
          ),
        listReviews: (
          workspaceId: string,
          traceId: string,
          limit: number,
          after: Option.Option<{ readonly at: string; readonly id: string }>
        ) =>
          sql`select * from review_events where workspace_id = ${workspaceId} and trace_id = ${traceId}
          ${Option.isNone(after) ? sql`` : sql`and (created_at, id) < (${after.value.at}::timestamptz, ${after.value.id})`}
          order by created_at desc, id desc limit ${limit + 1}`.pipe(Effect.flatMap(decodeReviews))
      })
    }
  })
}) {}
