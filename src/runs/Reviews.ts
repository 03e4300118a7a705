/**
 * Human review events on traces. The reviewer is the caller; the trace then
 * shows the latest outcome and when it was given. Each review is also
 * published on the `review-events` topic for human-review analytics.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import type { Caller } from "../identity/Authentication.js"
import { WorkspaceSettings } from "../identity/WorkspaceSettings.js"
import { keepJson, keepOptionalString } from "../privacy/Redaction.js"
import { pageByTime } from "../platform/Cursor.js"
import { NotFound } from "../http/Errors.js"
import { prefixedId } from "../platform/Ids.js"
import { Outbox } from "../platform/Outbox.js"
import { toTimestamp } from "../platform/Schemas.js"
import { dieOnErrors, orFailWith, transactionOf } from "../platform/Sql.js"
import { Topics } from "../platform/Topics.js"
import { ReviewEventId, ReviewEventMessage, type ReviewOutcome, type RunKind, TraceId } from "./Domain.js"
import { Traces } from "./Traces.js"

const ReviewRow = Schema.Struct({
  id: Schema.String,
  trace_id: Schema.String,
  workspace_id: Schema.String,
  run_id: Schema.NullOr(Schema.String),
  run_event_id: Schema.NullOr(Schema.String),
  reviewer_id: Schema.String,
  outcome: Schema.String,
  /** jsonb: an array of strings. */
  reason_codes: Schema.Array(Schema.String),
  note: Schema.NullOr(Schema.String),
  metadata: Schema.Unknown,
  created_at: Schema.DateFromSelf
})
type ReviewRow = typeof ReviewRow.Type

/** What human-review analytics groups a review by (`policy_ids` is a jsonb array). */
const AnalyticsContextRow = Schema.Struct({
  agent_id: Schema.NullOr(Schema.String),
  environment_id: Schema.NullOr(Schema.String),
  run_kind: Schema.NullOr(Schema.String),
  policy_ids: Schema.NullOr(Schema.Array(Schema.String)),
  workflow_step: Schema.NullOr(Schema.String)
})

const decodeReviews = Schema.decodeUnknown(Schema.Array(ReviewRow))

const toReview = (row: ReviewRow) => ({
  id: ReviewEventId.make(row.id),
  trace_id: TraceId.make(row.trace_id),
  run_id: row.run_id,
  run_event_id: row.run_event_id,
  workspace_id: row.workspace_id,
  reviewer_id: row.reviewer_id,
  outcome: row.outcome as ReviewOutcome,
  reason_codes: row.reason_codes,
  note: row.note,
  metadata: row.metadata,
  created_at: toTimestamp(row.created_at)
})

const encodeReviewEventMessage = Schema.encodeSync(ReviewEventMessage)

const traceNotFound = (id: string) =>
  new NotFound({ code: "trace_not_found", message: `No trace ${id} in this workspace.` })

export class Reviews extends Effect.Service<Reviews>()("runs/Reviews", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const transaction = transactionOf(sql)
    const traces = yield* Traces
    const outbox = yield* Outbox
    const settings = yield* WorkspaceSettings
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
    const repo = dieOnErrors({
      insert: (row: Omit<ReviewRow, "created_at">) => insertReview(row),
      /** What human-review analytics groups a review by, carried on the topic so analytics never reads traces. */
      analyticsContext: (workspaceId: string, traceId: string) =>
        findAnalyticsContext({ workspaceId, traceId }).pipe(
          Effect.map(Option.getOrUndefined),
          Effect.map((row) => ({
            agent_id: row?.agent_id ?? null,
            environment_id: row?.environment_id ?? null,
            run_kind: (row?.run_kind ?? null) as RunKind | null,
            policy_ids: row?.policy_ids ?? [],
            workflow_step: row?.workflow_step ?? null
          }))
        ),
      list: (
        workspaceId: string,
        traceId: string,
        limit: number,
        after: Option.Option<{ readonly at: string; readonly id: string }>
      ) =>
        sql`select * from review_events where workspace_id = ${workspaceId} and trace_id = ${traceId}
          ${Option.isNone(after) ? sql`` : sql`and (created_at, id) < (${after.value.at}::timestamptz, ${after.value.id})`}
          order by created_at desc, id desc limit ${limit + 1}`.pipe(Effect.flatMap(decodeReviews))
    })

    const trace = (workspaceId: string, traceId: string) =>
      traces.find(workspaceId, traceId).pipe(orFailWith(() => traceNotFound(traceId)))

    const create = Effect.fn("Reviews.create")(function* (
      caller: Caller,
      traceId: string,
      input: {
        readonly outcome: ReviewOutcome
        readonly reason_codes?: ReadonlyArray<string> | undefined
        readonly note?: string | undefined
        readonly metadata?: unknown
      }
    ) {
      const found = yield* trace(caller.workspaceId, traceId)
      const context = yield* repo.analyticsContext(caller.workspaceId, traceId)
      // A reviewer's note and metadata may quote the content: kept as the workspace's data_handling_mode allows.
      const mode = (yield* settings.runtimeConfig(caller.workspaceId)).settings.data_handling_mode
      return yield* transaction(
        Effect.gen(function* () {
          const row = yield* repo.insert({
            id: prefixedId("rvw"),
            trace_id: traceId,
            workspace_id: caller.workspaceId,
            run_id: found.run_id,
            run_event_id: found.run_event_id,
            reviewer_id: caller.principalId,
            outcome: input.outcome,
            reason_codes: input.reason_codes ?? [],
            note: keepOptionalString(mode, input.note),
            metadata: keepJson(mode, input.metadata ?? null)
          })
          yield* traces.setLatestReview(caller.workspaceId, traceId, row.outcome, row.created_at)
          yield* outbox.enqueue([
            {
              topic: Topics.reviewEvents,
              key: caller.workspaceId,
              value: encodeReviewEventMessage({
                schema_version: 1,
                review_event_id: row.id,
                trace_id: traceId,
                workspace_id: caller.workspaceId,
                run_id: row.run_id,
                reviewer_id: row.reviewer_id,
                ...context,
                outcome: row.outcome as ReviewOutcome,
                reason_codes: row.reason_codes,
                reviewed_at: row.created_at.toISOString()
              })
            }
          ])
          return toReview(row)
        })
      )
    })

    const list = Effect.fn("Reviews.list")(function* (
      workspaceId: string,
      traceId: string,
      limit: number,
      cursor: string | undefined
    ) {
      yield* trace(workspaceId, traceId)
      const { next, page } = yield* pageByTime(cursor, limit, (after) => repo.list(workspaceId, traceId, limit, after))
      return { review_events: page.map(toReview), ...next }
    })

    return { create, list }
  })
}) {}
