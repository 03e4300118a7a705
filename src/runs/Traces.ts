/**
 * Decision traces: one per authorization call, written by the authorization
 * service inside its transaction (durable before the answer is sent), read
 * newest first with cursor paging.
 */
import { Effect, Option } from "effect"
import { BadRequest, NotFound } from "../http/Errors.js"
import { toTimestamp, toTimestampOrNull } from "../platform/Schemas.js"
import { TraceId } from "./Domain.js"
import { decodeTimeCursor, encodeTimeCursor, fetchedPageByTime, windowAround } from "../platform/Cursor.js"
import { MAX_PAGE_BYTES } from "../platform/Sql.js"
import { type TraceFilters, TraceRepo, type TraceRow } from "./TraceRepo.js"

export type { NewTrace, TraceFilters } from "./TraceRepo.js"

const invalidAfter = new BadRequest({
  code: "validation_failed",
  message: "after: not a tail_cursor from this list",
  details: [{ path: "after", message: "not a tail_cursor from this list" }]
})

/** A tail cursor before every trace. */
const START_OF_TAIL = encodeTimeCursor(new Date(0), "0")

export const toTrace = (row: TraceRow) => ({
  trace_id: TraceId.make(row.id),
  agent_id: row.agent_id,
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
  payload: row.payload,
  policy_set_digest: row.policy_set_digest
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
      const { next, page } = yield* fetchedPageByTime(cursor, (before) =>
        repo.listTraces(workspaceId, filters, limit, before, MAX_PAGE_BYTES)
      )
      const newest = page[0]
      // Only the first page knows the newest trace; with none yet, the tail starts at the beginning.
      const tail =
        cursor !== undefined
          ? {}
          : { tail_cursor: newest === undefined ? START_OF_TAIL : encodeTimeCursor(newest.created_at, newest.id) }
      return { traces: page.map(toTrace), ...next, ...tail }
    })

    /** The live tail: the traces after `after` (a tail_cursor), oldest first, with the cursor to poll next. */
    const tail = Effect.fn("Traces.tail")(function* (
      workspaceId: string,
      filters: TraceFilters,
      limit: number,
      after: string
    ) {
      const position = decodeTimeCursor(after)
      if (Option.isNone(position)) return yield* invalidAfter
      const rows = yield* repo.tailTraces(workspaceId, filters, limit, position.value, MAX_PAGE_BYTES)
      const last = rows[rows.length - 1]
      return {
        traces: rows.map(toTrace),
        tail_cursor: last === undefined ? after : encodeTimeCursor(last.created_at, last.id)
      }
    })

    /** One trace of the workspace, whole. */
    const get = Effect.fn("Traces.get")(function* (workspaceId: string, traceId: string) {
      const [row] = (yield* repo.listTraces(workspaceId, { traceId }, 1, Option.none(), MAX_PAGE_BYTES)).rows
      return row === undefined ? yield* traceNotFound(traceId) : toTrace(row)
    })

    /** The run's traces around the trace `traceId` (newest first), with next_cursor for the older ones. */
    const around = Effect.fn("Traces.around")(function* (
      workspaceId: string,
      runId: string,
      traceId: string,
      limit: number
    ) {
      const fetched = yield* repo.listRunTracesAround(workspaceId, runId, traceId, limit, MAX_PAGE_BYTES)
      const found = windowAround(fetched.rows, (row) => row.id === traceId, limit)
      if (found === undefined) {
        return yield* new NotFound({ code: "trace_not_found", message: `No trace ${traceId} in run ${runId}.` })
      }
      const { window } = found
      const more = found.more || fetched.more
      const last = window[window.length - 1]
      return {
        traces: window.map(toTrace),
        ...(more && last !== undefined ? { next_cursor: encodeTimeCursor(last.created_at, last.id) } : {})
      }
    })

    return {
      insertStatement: repo.insertStatement,
      list,
      tail,
      get,
      around,
      find: repo.find,
      setLatestReview: repo.setLatestReview
    }
  }),
  dependencies: [TraceRepo.Default]
}) {}
