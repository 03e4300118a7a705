/**
 * SQL of decision traces and their review events, rows decoded by Schema.
 * Every query takes the workspace id. A batch of traces is inserted as a
 * statement the decision group commit embeds in its own.
 */
import { SqlClient, SqlSchema, type Statement } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { storableJsonText } from "../platform/Json.js"
import { CutColumns, cutAtBytes, cutPage, wasCut } from "../platform/PageBytes.js"
import { instantOf } from "../platform/Schemas.js"
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
  /** The policy set that decided (src/policysets); null when deciding failed closed unread. */
  readonly policySetDigest: string | null
}

export const TraceRow = Schema.Struct({
  id: Schema.String,
  agent_id: Schema.String,
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
  payload: Schema.Unknown,
  policy_set_digest: Schema.NullOr(Schema.String)
})
export type TraceRow = typeof TraceRow.Type

/** What a review needs of its trace. */
const TraceLink = Schema.Struct({
  id: Schema.String,
  run_id: Schema.NullOr(Schema.String),
  run_event_id: Schema.NullOr(Schema.String)
})

const decodeCutTraces = Schema.decodeUnknown(Schema.Array(Schema.extend(TraceRow, CutColumns)))

/** The columns of a `TraceRow`, for every query that answers traces. */
export const traceColumns = (sql: SqlClient.SqlClient) => sql.unsafe(Object.keys(TraceRow.fields).join(", "))

export interface TraceFilters {
  readonly traceId?: string | undefined
  readonly sessionId?: string | undefined
  readonly runId?: string | undefined
  readonly agentId?: string | undefined
  readonly effect?: string | undefined
  readonly eventKind?: string | undefined
  readonly policyId?: string | undefined
  readonly environmentId?: string | undefined
  /** A review outcome, or `unreviewed` for traces without one. */
  readonly reviewOutcome?: string | undefined
  readonly start?: string | undefined
  readonly end?: string | undefined
  /** Substring of a finding's reason, case-insensitive. */
  readonly q?: string | undefined
}

type Position = Option.Option<{ readonly at: string; readonly id: string }>

/** `text` as a literal inside an ILIKE pattern (escape character `\`). */
const likeLiteral = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`)

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

const decodeCutReviews = Schema.decodeUnknown(Schema.Array(Schema.extend(ReviewRow, CutColumns)))

export class TraceRepo extends Effect.Service<TraceRepo>()("runs/TraceRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const TRACE_COLUMNS = traceColumns(sql)
    const NEWEST_FIRST = sql`created_at desc, id desc`
    const OLDEST_FIRST = sql`created_at, id`
    const PAYLOAD_BYTES = sql`octet_length(payload::text)`
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
          // A provider's answer or a tool's result may carry what jsonb refuses: stored as U+FFFD.
          payload: storableJsonText(trace.payload),
          policy_set_digest: trace.policySetDigest
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

    const optional = (value: string | undefined, condition: (value: string) => Statement.Fragment) =>
      value === undefined ? sql`` : condition(value)
    /** The traces of a workspace that pass `filters`, before ordering and position. */
    const selectTraces = (workspaceId: string, filters: TraceFilters) =>
      sql`select ${TRACE_COLUMNS} from traces where workspace_id = ${workspaceId}
          ${optional(filters.traceId, (v) => sql`and id = ${v}`)}
          ${optional(filters.sessionId, (v) => sql`and session_id = ${v}`)}
          ${optional(filters.runId, (v) => sql`and run_id = ${v}`)}
          ${optional(filters.agentId, (v) => sql`and agent_id = ${v}`)}
          ${optional(filters.effect, (v) => sql`and decision = ${v}`)}
          ${optional(filters.environmentId, (v) => sql`and environment_id = ${v}`)}
          ${optional(filters.eventKind, (v) => sql`and payload -> 'request' ->> 'kind' = ${v}`)}
          ${optional(filters.policyId, (v) => sql`and payload -> 'response' -> 'findings' @> ${JSON.stringify([{ policy_id: v }])}::jsonb`)}
          ${optional(filters.reviewOutcome, (v) =>
            v === "unreviewed" ? sql`and latest_review_outcome is null` : sql`and latest_review_outcome = ${v}`
          )}
          ${optional(filters.start, (v) => sql`and created_at >= ${instantOf(v)}`)}
          ${optional(filters.end, (v) => sql`and created_at < ${instantOf(v)}`)}
          ${optional(
            filters.q,
            (v) => sql`and exists (select 1 from jsonb_array_elements(
                         case when jsonb_typeof(payload -> 'response' -> 'findings') = 'array'
                              then payload -> 'response' -> 'findings' else '[]'::jsonb end) f
                       where f ->> 'reason' ilike ${`%${likeLiteral(v)}%`})`
          )}`

    return {
      insertStatement,
      ...dieOnErrors({
        /**
         * Newest first, before `before` (a page cursor's position): up to `limit`, cut after the trace that
         * brings the page to `maxBytes` of payload (`cutAtBytes`); `more` when traces follow the page.
         */
        listTraces: (workspaceId: string, filters: TraceFilters, limit: number, before: Position, maxBytes: number) =>
          cutAtBytes(
            sql,
            sql`${selectTraces(workspaceId, filters)}
              ${Option.isNone(before) ? sql`` : sql`and (created_at, id) < (${before.value.at}::timestamptz, ${before.value.id})`}
              order by created_at desc, id desc limit ${limit + 1}`,
            NEWEST_FIRST,
            PAYLOAD_BYTES,
            maxBytes
          ).pipe(
            Effect.flatMap(decodeCutTraces),
            Effect.map((rows) => cutPage(rows, limit))
          ),
        /** The live tail: oldest first, after `after`, cut at `maxBytes` of payload (`cutAtBytes`). */
        tailTraces: (
          workspaceId: string,
          filters: TraceFilters,
          limit: number,
          after: { readonly at: string; readonly id: string },
          maxBytes: number
        ) =>
          cutAtBytes(
            sql,
            sql`${selectTraces(workspaceId, filters)}
              and (created_at, id) > (${after.at}::timestamptz, ${after.id})
              order by created_at, id limit ${limit}`,
            OLDEST_FIRST,
            PAYLOAD_BYTES,
            maxBytes
          ).pipe(Effect.flatMap(decodeCutTraces)),
        /**
         * The run's traces within `limit` of the trace `traceId` on each side, that trace included, newest
         * first, each side cut at `maxBytesPerSide` of payload (`cutAtBytes`, nearest the trace first); none
         * when the run has no such trace (the second part always holds it otherwise). `olderCut`: the budget
         * left out older traces.
         */
        listRunTracesAround: (
          workspaceId: string,
          runId: string,
          traceId: string,
          limit: number,
          maxBytesPerSide: number
        ) => {
          const target = sql`(select created_at, id from traces
                              where workspace_id = ${workspaceId} and run_id = ${runId} and id = ${traceId})`
          const ofRun = selectTraces(workspaceId, { runId })
          const newer = cutAtBytes(
            sql,
            sql`${ofRun} and (created_at, id) > ${target} order by created_at, id limit ${limit}`,
            OLDEST_FIRST,
            PAYLOAD_BYTES,
            maxBytesPerSide
          )
          const older = cutAtBytes(
            sql,
            sql`${ofRun} and (created_at, id) <= ${target} order by created_at desc, id desc limit ${limit + 1}`,
            NEWEST_FIRST,
            PAYLOAD_BYTES,
            maxBytesPerSide
          )
          return Effect.all([newer, older]).pipe(
            Effect.flatMap(([later, earlier]) => Effect.all([decodeCutTraces(later), decodeCutTraces(earlier)])),
            Effect.map(([later, earlier]) => ({
              rows: [...later].reverse().concat(earlier),
              olderCut: wasCut(earlier)
            }))
          )
        },
        find: (workspaceId: string, id: string) => findTrace({ workspaceId, id }),
        /**
         * Shows a review on its trace unless a newer one is shown already: a review's time is its transaction's
         * start, so of two posted at once the older may commit last (the row lock orders the updates).
         */
        setLatestReview: (workspaceId: string, id: string, outcome: string, at: Date) =>
          sql`update traces set latest_review_outcome = ${outcome}, latest_reviewed_at = ${at}
            where workspace_id = ${workspaceId} and id = ${id}
              and (latest_reviewed_at is null or latest_reviewed_at <= ${at})`,
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
        /** A trace's reviews, newest first, cut at `maxBytes` of metadata (`cutAtBytes`; any runtime key may post it). */
        listReviews: (workspaceId: string, traceId: string, limit: number, before: Position, maxBytes: number) =>
          cutAtBytes(
            sql,
            sql`select * from review_events where workspace_id = ${workspaceId} and trace_id = ${traceId}
              ${Option.isNone(before) ? sql`` : sql`and (created_at, id) < (${before.value.at}::timestamptz, ${before.value.id})`}
              order by created_at desc, id desc limit ${limit + 1}`,
            NEWEST_FIRST,
            sql`octet_length(metadata::text) + coalesce(octet_length(note), 0)`,
            maxBytes
          ).pipe(
            Effect.flatMap(decodeCutReviews),
            Effect.map((rows) => cutPage(rows, limit))
          )
      })
    }
  })
}) {}
