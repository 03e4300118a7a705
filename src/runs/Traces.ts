/**
 * Decision traces: one per authorization call, written by the authorization
 * service inside its transaction (durable before the answer is sent), read
 * newest first with cursor paging.
 */
import { Effect, Option } from "effect"
import { NotFound } from "../http/Errors.js"
import { toTimestamp, toTimestampOrNull } from "../platform/Schemas.js"
import { TraceId } from "./Domain.js"
import { pageByTime } from "../platform/Cursor.js"
import { type TraceFilters, TraceRepo, type TraceRow } from "./TraceRepo.js"

export type { NewTrace, TraceFilters } from "./TraceRepo.js"

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
  latest_review_outcome: row.latest_review_outcome,
  latest_reviewed_at: toTimestampOrNull(row.latest_reviewed_at),
  created_at: toTimestamp(row.created_at),
  payload: row.payload
})

export const traceNotFound = (id: string) =>
  new NotFound({ code: "trace_not_found", message: `No trace ${id} in this workspace.` })

export class Traces extends Effect.Service<Traces>()("runs/Traces", {
  effect: Effect.gen(function* () {
    const repo = yield* TraceRepo

    const list = Effect.fn("Traces.list")(function* (
      workspaceId: string,
      filters: TraceFilters,
      limit: number,
      cursor: string | undefined
    ) {
      const { next, page } = yield* pageByTime(cursor, limit, (after) =>
        repo.listTraces(workspaceId, filters, limit, after)
      )
      return { traces: page.map(toTrace), ...next }
    })

    /** One trace of the workspace, whole. */
    const get = Effect.fn("Traces.get")(function* (workspaceId: string, traceId: string) {
      const [row] = yield* repo.listTraces(workspaceId, { traceId }, 1, Option.none())
      return row === undefined ? yield* traceNotFound(traceId) : toTrace(row)
    })

    return { insertStatement: repo.insertStatement, list, get, find: repo.find, setLatestReview: repo.setLatestReview }
  }),
  dependencies: [TraceRepo.Default]
}) {}
