/**
 * What every answered request leaves behind, on every path (pipeline, lane,
 * direct): the request metrics by route template, and one access-log line
 * when info logs are kept.
 */
import { Effect } from "effect"
import { recordRequest } from "../operations/Metrics.js"

export interface AnsweredRequest {
  readonly requestId: string
  readonly method: string
  /** The route template; unknown paths share `unmatched` in metrics (bounded cardinality) and log their path. */
  readonly template: string | undefined
  readonly path: string
  readonly status: number
  /** `performance.now()` when the request arrived. */
  readonly startedAt: number
}

/** Records the request's metrics at once, and answers the access-log line to write (when `logs`). */
export const requestAnswered = (request: AnsweredRequest, logs: boolean): Effect.Effect<void> => {
  const elapsed = performance.now() - request.startedAt
  recordRequest(request.method, request.template ?? "unmatched", request.status, elapsed / 1000)
  if (!logs) return Effect.void
  return Effect.logInfo("request").pipe(
    Effect.annotateLogs({
      request_id: request.requestId,
      method: request.method,
      route: request.template ?? request.path,
      status: request.status,
      duration_ms: Math.round(elapsed * 100) / 100
    })
  )
}
