/**
 * Decision traces: one per authorization call, written by the authorization
 * service inside its transaction (durable before the answer is sent), read
 * newest first with cursor paging.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { toTimestamp, toTimestampOrNull } from "../platform/Schemas.js"
import { dieOnErrors } from "../platform/Sql.js"
import { TraceId } from "./Domain.js"
import { pageByTime } from "../platform/Cursor.js"

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

const TraceRow = Schema.Struct({
  id: Schema.String,
  run_id: Schema.NullOr(Schema.String),
  run_event_id: Schema.NullOr(Schema.String),
  session_id: Schema.NullOr(Schema.String),
  decision: Schema.String,
  domain: Schema.String,
  environment: Schema.String,
  environment_id: Schema.String,
  elapsed_ms: Schema.Number,
  latest_review_outcome: Schema.NullOr(Schema.String),
  latest_reviewed_at: Schema.NullOr(Schema.DateFromSelf),
  created_at: Schema.DateFromSelf,
  payload: Schema.Unknown
})
type TraceRow = typeof TraceRow.Type

/** What a review needs of its trace. */
const TraceLink = Schema.Struct({
  id: Schema.String,
  run_id: Schema.NullOr(Schema.String),
  run_event_id: Schema.NullOr(Schema.String)
})

const decodeTraces = Schema.decodeUnknown(Schema.Array(TraceRow))

type ReviewOutcome = "accepted" | "corrected" | "false_positive" | "ignored" | "missed_issue" | "rejected"

const toTrace = (row: TraceRow) => ({
  trace_id: TraceId.make(row.id),
  run_id: row.run_id,
  run_event_id: row.run_event_id,
  session_id: row.session_id,
  decision: row.decision,
  domain: row.domain,
  environment: row.environment,
  environment_id: row.environment_id,
  elapsed_ms: row.elapsed_ms,
  latest_review_outcome: row.latest_review_outcome as ReviewOutcome | null,
  latest_reviewed_at: toTimestampOrNull(row.latest_reviewed_at),
  created_at: toTimestamp(row.created_at),
  payload: row.payload
})

export interface TraceFilters {
  readonly sessionId?: string | undefined
  readonly runId?: string | undefined
  readonly agentId?: string | undefined
  readonly effect?: string | undefined
}

export class Traces extends Effect.Service<Traces>()("runs/Traces", {
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
    const repo = dieOnErrors({
      list: (
        workspaceId: string,
        filters: TraceFilters,
        limit: number,
        after: Option.Option<{ at: string; id: string }>
      ) =>
        sql`select id, run_id, run_event_id, session_id, decision, domain, environment, environment_id, elapsed_ms,
                             latest_review_outcome, latest_reviewed_at, created_at, payload
                      from traces where workspace_id = ${workspaceId}
                      ${filters.sessionId === undefined ? sql`` : sql`and session_id = ${filters.sessionId}`}
                      ${filters.runId === undefined ? sql`` : sql`and run_id = ${filters.runId}`}
                      ${filters.agentId === undefined ? sql`` : sql`and agent_id = ${filters.agentId}`}
                      ${filters.effect === undefined ? sql`` : sql`and decision = ${filters.effect}`}
                      ${Option.isNone(after) ? sql`` : sql`and (created_at, id) < (${after.value.at}::timestamptz, ${after.value.id})`}
                      order by created_at desc, id desc limit ${limit + 1}`.pipe(Effect.flatMap(decodeTraces)),
      find: (workspaceId: string, id: string) => findTrace({ workspaceId, id }),
      setLatestReview: (workspaceId: string, id: string, outcome: string, at: Date) =>
        sql`update traces set latest_review_outcome = ${outcome}, latest_reviewed_at = ${at}
            where workspace_id = ${workspaceId} and id = ${id}`
    })

    const list = Effect.fn("Traces.list")(function* (
      workspaceId: string,
      filters: TraceFilters,
      limit: number,
      cursor: string | undefined
    ) {
      const { next, page } = yield* pageByTime(cursor, limit, (after) => repo.list(workspaceId, filters, limit, after))
      return { traces: page.map(toTrace), ...next }
    })

    return { insertStatement, list, find: repo.find, setLatestReview: repo.setLatestReview }
  })
}) {}
