/**
 * Decision traces: one per authorization call, written by the authorization
 * service inside its transaction (durable before the answer is sent), read
 * newest first with cursor paging.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
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

interface TraceRow {
  readonly id: string
  readonly run_id: string | null
  readonly run_event_id: string | null
  readonly session_id: string | null
  readonly decision: string
  readonly domain: string
  readonly environment: string
  readonly environment_id: string
  readonly elapsed_ms: number
  readonly latest_review_outcome: string | null
  readonly latest_reviewed_at: Date | null
  readonly created_at: Date
  readonly payload: unknown
}

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
    const repo = dieOnErrors({
      list: (
        workspaceId: string,
        filters: TraceFilters,
        limit: number,
        after: Option.Option<{ at: string; id: string }>
      ) =>
        sql<TraceRow>`select id, run_id, run_event_id, session_id, decision, domain, environment, environment_id, elapsed_ms,
                             latest_review_outcome, latest_reviewed_at, created_at, payload
                      from traces where workspace_id = ${workspaceId}
                      ${filters.sessionId === undefined ? sql`` : sql`and session_id = ${filters.sessionId}`}
                      ${filters.runId === undefined ? sql`` : sql`and run_id = ${filters.runId}`}
                      ${filters.agentId === undefined ? sql`` : sql`and agent_id = ${filters.agentId}`}
                      ${filters.effect === undefined ? sql`` : sql`and decision = ${filters.effect}`}
                      ${Option.isNone(after) ? sql`` : sql`and (created_at, id) < (${after.value.at}::timestamptz, ${after.value.id})`}
                      order by created_at desc, id desc limit ${limit + 1}`,
      find: (workspaceId: string, id: string) =>
        sql<{ id: string; run_id: string | null; run_event_id: string | null }>`
          select id, run_id, run_event_id from traces where workspace_id = ${workspaceId} and id = ${id}`.pipe(
          Effect.map((rows) => Option.fromNullable(rows[0]))
        ),
      setLatestReview: (workspaceId: string, id: string, outcome: string, at: Date) =>
        sql`update traces set latest_review_outcome = ${outcome}, latest_reviewed_at = ${at}
            where workspace_id = ${workspaceId} and id = ${id}`
    })

    const list = (workspaceId: string, filters: TraceFilters, limit: number, cursor: string | undefined) =>
      Effect.gen(function* () {
        const { next, page } = yield* pageByTime(cursor, limit, (after) =>
          repo.list(workspaceId, filters, limit, after)
        )
        return { traces: page.map(toTrace), ...next }
      })

    return { insertStatement, list, find: repo.find, setLatestReview: repo.setLatestReview }
  })
}) {}
