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
 */
import { SqlClient } from "@effect/sql"
import { Clock, Effect } from "effect"

export interface PruneWindows {
  readonly processedEventsHours: number
  readonly eventLogHours: number
  /** Rows deleted per statement. */
  readonly batchSize: number
}

const HOUR_MILLIS = 60 * 60 * 1000

/** Deletes in batches of at most `batchSize` until a batch comes back short; answers the rows deleted. */
const inBatches = <E, R>(batchSize: number, deleteBatch: Effect.Effect<ReadonlyArray<{ count: string }>, E, R>) =>
  Effect.gen(function* () {
    let deleted = 0
    while (true) {
      const rows = yield* deleteBatch
      const count = Number(rows[0]?.count ?? 0)
      deleted += count
      if (count < batchSize) return deleted
      yield* Effect.yieldNow()
    }
  })

/** One pruning pass; answers rows deleted per table. */
export const pruneEventPlumbing = (windows: PruneWindows) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const now = yield* Clock.currentTimeMillis
    const dedupeCutoff = new Date(now - windows.processedEventsHours * HOUR_MILLIS)
    const logCutoff = new Date(now - windows.eventLogHours * HOUR_MILLIS)

    const [stuck] = yield* sql<{ stuck: boolean }>`
      select exists (select 1 from outbox where created_at < ${dedupeCutoff}) as stuck`
    const processedEvents = stuck?.stuck
      ? 0
      : yield* inBatches(
          windows.batchSize,
          sql<{ count: string }>`
            with lagging as (
              select distinct c.group_id from consumer_positions c
              where exists (select 1 from event_log l
                            where l.topic = c.topic and l."offset" > c.position and l.created_at < ${dedupeCutoff})
            ), doomed as (
              select p.group_id, p.event_id from processed_events p
              where p.processed_at < ${dedupeCutoff}
                and p.group_id not in (select group_id from lagging)
                and not exists (select 1 from outbox o where o.event_id = p.event_id)
              limit ${windows.batchSize}
            ), gone as (
              delete from processed_events p using doomed d
              where p.group_id = d.group_id and p.event_id = d.event_id returning 1
            )
            select count(*)::text as count from gone`
        )

    const eventLog = yield* inBatches(
      windows.batchSize,
      sql<{ count: string }>`
        with read_by_all as (
          select topic, min(position) as position from consumer_positions group by topic
        ), doomed as (
          select l."offset" from event_log l left join read_by_all r on r.topic = l.topic
          where l.created_at < ${logCutoff} and (r.position is null or l."offset" <= r.position)
          limit ${windows.batchSize}
        ), gone as (delete from event_log where "offset" in (select "offset" from doomed) returning 1)
        select count(*)::text as count from gone`
    )
    return { processed_events: processedEvents, event_log: eventLog }
  })
