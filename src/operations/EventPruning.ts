/**
 * The retention task's pruning of the event plumbing: the dedupe records
 * (`processed_events`) and the database event log (`event_log`). Both grow
 * with every event; neither may be pruned while it can still stop a double
 * count or a loss. The rules (docs/operations.md, "Pruning the event
 * plumbing"), with W the configured window:
 *
 * - A dedupe record (group G, event E) goes once it is older than W, E is not
 *   in the outbox (no copy of E can be published any more), no outbox row is
 *   older than W (a stuck relay may still publish old events), and, on the
 *   database log, G has read every `event_log` row older than W (a copy still
 *   unread would find no record). A redelivery of an offset G has applied is
 *   skipped by G's stored position, which is never pruned.
 * - An `event_log` row goes once it is older than W and every group that reads
 *   its topic (has a position on it) has read past it; a topic no group has
 *   read is pruned by age alone (like Kafka's retention).
 * - An idempotency key goes once its 24 h window is over (src/idempotency).
 */
import { Clock, Effect } from "effect"
import { IDEMPOTENCY_WINDOW_HOURS } from "../idempotency/Domain.js"
import {
  outboxHoldsOlderThan,
  pruneEventLogBatch,
  pruneIdempotencyKeysBatch,
  pruneProcessedEventsBatch
} from "./Repo.js"

export interface PruneWindows {
  readonly processedEventsHours: number
  readonly eventLogHours: number
  /** Rows deleted per statement. */
  readonly batchSize: number
}

const HOUR_MILLIS = 60 * 60 * 1000

/** Deletes in batches of at most `batchSize` until a batch comes back short; answers the rows deleted. */
const inBatches = <E, R>(batchSize: number, deleteBatch: Effect.Effect<number, E, R>) =>
  Effect.gen(function* () {
    let deleted = 0
    while (true) {
      const count = yield* deleteBatch
      deleted += count
      if (count < batchSize) return deleted
      yield* Effect.yieldNow()
    }
  })

/** One pruning pass; answers rows deleted per table. */
export const pruneEventPlumbing = Effect.fn("EventPruning.prune")(function* (windows: PruneWindows) {
  const now = yield* Clock.currentTimeMillis
  const dedupeCutoff = new Date(now - windows.processedEventsHours * HOUR_MILLIS)
  const logCutoff = new Date(now - windows.eventLogHours * HOUR_MILLIS)

  const stuck = yield* outboxHoldsOlderThan(dedupeCutoff)
  const processedEvents = stuck
    ? 0
    : yield* inBatches(windows.batchSize, pruneProcessedEventsBatch(dedupeCutoff, windows.batchSize))
  const eventLog = yield* inBatches(windows.batchSize, pruneEventLogBatch(logCutoff, windows.batchSize))
  const keyCutoff = new Date(now - IDEMPOTENCY_WINDOW_HOURS * HOUR_MILLIS)
  const idempotencyKeys = yield* inBatches(windows.batchSize, pruneIdempotencyKeysBatch(keyCutoff, windows.batchSize))
  return { processed_events: processedEvents, event_log: eventLog, idempotency_keys: idempotencyKeys }
})
