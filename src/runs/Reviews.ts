/**
 * Human review events on traces. The reviewer is the caller; the trace then
 * shows the latest outcome and when it was given. Each review is also
 * published on the `review-events` topic for human-review analytics.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import type { Caller } from "../identity/Authentication.js"
import { WorkspaceSettings } from "../identity/WorkspaceSettings.js"
import { keepJson, keepOptionalString } from "../privacy/Redaction.js"
import { pageByTimeCut } from "../platform/Cursor.js"
import { MAX_PAGE_BYTES } from "../platform/PageBytes.js"
import { prefixedId } from "../platform/Ids.js"
import { Outbox } from "../platform/Outbox.js"
import { toTimestamp } from "../platform/Schemas.js"
import { orFailWith, transactionOf } from "../platform/Sql.js"
import { Topics } from "../platform/Topics.js"
import { ReviewEventId, ReviewEventMessage, type ReviewOutcome, TraceId } from "./Domain.js"
import { environmentMismatch } from "./RunEventWriter.js"
import { type ReviewRow, TraceRepo } from "./TraceRepo.js"
import { traceNotFound, Traces } from "./Traces.js"

const toReview = (row: ReviewRow) => ({
  id: ReviewEventId.make(row.id),
  trace_id: TraceId.make(row.trace_id),
  run_id: row.run_id,
  run_event_id: row.run_event_id,
  workspace_id: row.workspace_id,
  reviewer_id: row.reviewer_id,
  outcome: row.outcome,
  reason_codes: row.reason_codes,
  note: row.note,
  metadata: row.metadata,
  created_at: toTimestamp(row.created_at)
})

const encodeReviewEventMessage = Schema.encodeSync(ReviewEventMessage)

export class Reviews extends Effect.Service<Reviews>()("runs/Reviews", {
  effect: Effect.gen(function* () {
    const transaction = transactionOf(yield* SqlClient.SqlClient)
    const traces = yield* Traces
    const outbox = yield* Outbox
    const settings = yield* WorkspaceSettings
    const repo = yield* TraceRepo

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
      // A runtime key reviews only traces of its own environment, as it appends only to its own runs.
      if (caller.environmentId !== null && context.environment_id !== caller.environmentId) {
        return yield* environmentMismatch(caller.environmentId, `trace ${traceId}`)
      }
      // A reviewer's note and metadata may quote the content: kept as the workspace's data_handling_mode allows.
      const mode = yield* settings.dataHandlingMode(caller.workspaceId)
      return yield* transaction(
        Effect.gen(function* () {
          const row = yield* repo.insertReview({
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
                outcome: row.outcome,
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
      const { next, page } = yield* pageByTimeCut(cursor, (after) =>
        repo.listReviews(workspaceId, traceId, limit, after, MAX_PAGE_BYTES)
      )
      return { review_events: page.map(toReview), ...next }
    })

    return { create, list }
  }),
  dependencies: [TraceRepo.Default]
}) {}
