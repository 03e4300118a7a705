/**
 * Effect-once consumption: a handler's work commits in one database
 * transaction together with dedupe records of the event ids, so a delivery
 * seen again (after a crash before the ack, or a duplicate publish) changes
 * nothing. Deliveries are applied in small batches (one transaction per
 * batch, in order); a batch that fails is retried one event at a time, and an
 * event that keeps failing is dead-lettered, then acknowledged, so one bad
 * event cannot stop a partition.
 */
import { SqlClient } from "@effect/sql"
import { Chunk, Duration, Effect, Schedule, Stream } from "effect"
import { type Delivery, EventLog, type SubscribeOptions } from "./EventLog.js"

export interface ConsumeOptions<E, R> extends SubscribeOptions {
  readonly handle: (delivery: Delivery) => Effect.Effect<unknown, E, R>
  readonly maxAttempts?: number
  /** Most deliveries applied in one transaction (default 500). */
  readonly batchSize?: number
}

const BATCH_WINDOW = Duration.millis(5)

/** Runs the handler for each delivery this group has not applied yet, all in one transaction. */
export const applyOnce = <E, R>(
  group: string,
  batch: ReadonlyArray<Delivery>,
  handle: (delivery: Delivery) => Effect.Effect<unknown, E, R>
) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    return yield* sql.withTransaction(
      Effect.gen(function* () {
        const inserted = yield* sql<{ event_id: string }>`
          insert into processed_events ${sql.insert(batch.map((delivery) => ({ group_id: group, event_id: delivery.eventId })))}
          on conflict do nothing returning event_id::text as event_id`
        const fresh = new Set(inserted.map((row) => row.event_id))
        for (const delivery of batch) {
          if (fresh.delete(delivery.eventId)) yield* handle(delivery)
        }
        return inserted.length
      })
    )
  })

const deadLetter = (group: string, delivery: Delivery, error: unknown) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql`insert into dead_letters (group_id, topic, key, event_id, value, error)
                 values (${group}, ${delivery.topic}, ${delivery.key}, ${delivery.eventId}, ${delivery.value}, ${String(error)})`
  ).pipe(
    Effect.zipRight(
      Effect.logError("event dead-lettered", { group, topic: delivery.topic, event_id: delivery.eventId })
    )
  )

/** Acks the last delivery of each partition in the batch (an ack covers the earlier ones). */
const ackBatch = (batch: ReadonlyArray<Delivery>) => {
  const last = new Map<string, Delivery>()
  for (const delivery of batch) last.set(`${delivery.topic}:${delivery.partition}`, delivery)
  return Effect.forEach(last.values(), (delivery) => delivery.ack, { discard: true })
}

/** Consumes until interrupted; a failing subscription is reopened with backoff. */
export const consumeOnce = <E, R>(options: ConsumeOptions<E, R>) =>
  Effect.gen(function* () {
    const log = yield* EventLog
    const retry = Schedule.exponential(Duration.millis(50)).pipe(
      Schedule.intersect(Schedule.recurs((options.maxAttempts ?? 5) - 1))
    )
    const applyAlone = (delivery: Delivery) =>
      applyOnce(options.group, [delivery], options.handle).pipe(
        Effect.retry(retry),
        Effect.catchAll((error) => deadLetter(options.group, delivery, error))
      )
    const applyBatch = (batch: ReadonlyArray<Delivery>) =>
      applyOnce(options.group, batch, options.handle).pipe(
        Effect.catchAll(() => Effect.forEach(batch, applyAlone, { discard: true })),
        Effect.zipRight(ackBatch(batch))
      )
    yield* log.subscribe(options).pipe(
      Stream.groupedWithin(options.batchSize ?? 500, BATCH_WINDOW),
      Stream.runForEach((chunk) => applyBatch(Chunk.toReadonlyArray(chunk)))
    )
  }).pipe(
    Effect.tapErrorCause((cause) => Effect.logWarning(`consumer ${options.group} failed; reopening`, cause)),
    Effect.retry(Schedule.exponential(Duration.millis(200)).pipe(Schedule.union(Schedule.spaced(Duration.seconds(5)))))
  )
