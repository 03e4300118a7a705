/**
 * Stream consumers that apply each event exactly once.
 *
 * A subscription's deliveries are routed to one actor per topic partition
 * (Actors.ts), so a partition is processed in order and every key's state is
 * owned by one fiber. Each actor applies its deliveries in batches, one
 * database transaction per batch, which also
 *   - locks and advances the partition's position in
 *     `consumer_partition_positions` (deliveries below it are skipped: a
 *     restart or rebalance re-reads what Kafka had not committed yet), and
 *   - inserts the event ids into `processed_events` (an event the outbox
 *     relay published twice, at another offset, is skipped).
 * Effects, dedupe records and position commit together or not at all, so a
 * crash at any point neither loses nor double-applies an event. The log's own
 * acknowledgement follows the commit and only saves re-reading.
 *
 * A batch that fails is retried one delivery at a time; a delivery that keeps
 * failing is dead-lettered (with the position moved past it) so one bad event
 * cannot stop its partition.
 */
import { SqlClient } from "@effect/sql"
import type { SqlError } from "@effect/sql/SqlError"
import { Cause, Duration, Effect, Option, Schedule, Stream } from "effect"
import { makeActors } from "./Actors.js"
import { AppConfig } from "./Config.js"
import { type Delivery, EventLog, type SubscribeOptions } from "./EventLog.js"

export interface StreamConsumerOptions<E, R> extends SubscribeOptions {
  /** Applies fresh deliveries of one partition, in order, inside the batch's transaction. */
  readonly apply: (batch: ReadonlyArray<Delivery>) => Effect.Effect<unknown, E, R>
  readonly maxAttempts?: number
  /** Most deliveries applied in one transaction (default 500). */
  readonly batchSize?: number
}

export interface ConsumeOptions<E, R> extends SubscribeOptions {
  readonly handle: (delivery: Delivery) => Effect.Effect<unknown, E, R>
  readonly maxAttempts?: number
  /** Most deliveries applied in one transaction (default 500). */
  readonly batchSize?: number
}

/** Inserts the dedupe records; answers the deliveries not applied before (first of each event id). */
const freshOf = (group: string, batch: ReadonlyArray<Delivery>) =>
  Effect.gen(function* () {
    if (batch.length === 0) return []
    const sql = yield* SqlClient.SqlClient
    const inserted = yield* sql<{ event_id: string }>`
      insert into processed_events ${sql.insert(batch.map((delivery) => ({ group_id: group, event_id: delivery.eventId })))}
      on conflict do nothing returning event_id::text as event_id`
    const fresh = new Set(inserted.map((row) => row.event_id))
    return batch.filter((delivery) => fresh.delete(delivery.eventId))
  })

/** Runs the handler for each delivery this group has not applied yet, all in one transaction (dedupe only). */
export const applyOnce = <E, R>(
  group: string,
  batch: ReadonlyArray<Delivery>,
  handle: (delivery: Delivery) => Effect.Effect<unknown, E, R>
) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.withTransaction(
      Effect.gen(function* () {
        const fresh = yield* freshOf(group, batch)
        for (const delivery of fresh) yield* handle(delivery)
        return fresh.length
      })
    )
  )

/** Locks the partition's position row and answers the next offset to apply. */
const lockPosition = (group: string, topic: string, partition: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ next_offset: string }>`
      insert into consumer_partition_positions (group_id, topic, partition, next_offset)
      values (${group}, ${topic}, ${partition}, 0)
      on conflict (group_id, topic, partition) do update set next_offset = consumer_partition_positions.next_offset
      returning next_offset::text as next_offset`.pipe(Effect.map((rows) => BigInt(rows[0]!.next_offset)))
  )

const storePosition = (group: string, last: Delivery) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql`update consumer_partition_positions
                 set next_offset = ${(BigInt(last.offset) + 1n).toString()}, updated_at = now()
                 where group_id = ${group} and topic = ${last.topic} and partition = ${last.partition}`
  )

/**
 * One transaction over deliveries of ONE partition (in offset order): skip
 * what the stored position says is done, dedupe by event id, apply, advance
 * the position. Answers how many deliveries were applied.
 */
export const applyPartitionBatch = <E, R>(
  group: string,
  batch: ReadonlyArray<Delivery>,
  apply: (fresh: ReadonlyArray<Delivery>) => Effect.Effect<unknown, E, R>
): Effect.Effect<number, E | SqlError, R | SqlClient.SqlClient> =>
  Effect.gen(function* () {
    const first = batch[0]
    if (first === undefined) return 0
    const sql = yield* SqlClient.SqlClient
    return yield* sql.withTransaction(
      Effect.gen(function* () {
        const next = yield* lockPosition(group, first.topic, first.partition)
        const pending = batch.filter((delivery) => BigInt(delivery.offset) >= next)
        const last = pending[pending.length - 1]
        if (last === undefined) return 0
        const fresh = yield* freshOf(group, pending)
        if (fresh.length > 0) yield* apply(fresh)
        yield* storePosition(group, last)
        return fresh.length
      })
    )
  })

const deadLetter = (group: string, delivery: Delivery, error: unknown) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.withTransaction(
      Effect.gen(function* () {
        const next = yield* lockPosition(group, delivery.topic, delivery.partition)
        if (BigInt(delivery.offset) < next) return
        yield* freshOf(group, [delivery])
        yield* sql`insert into dead_letters (group_id, topic, key, event_id, value, error)
                   values (${group}, ${delivery.topic}, ${delivery.key}, ${delivery.eventId}, ${delivery.value}, ${String(error)})`
        yield* storePosition(group, delivery)
      })
    )
  ).pipe(
    Effect.zipRight(
      Effect.logError("event dead-lettered", { group, topic: delivery.topic, event_id: delivery.eventId })
    )
  )

/** The error of a failure as is; a defect as its pretty cause. */
const describe = (cause: Cause.Cause<unknown>) =>
  Option.match(Cause.failureOption(cause), { onNone: () => Cause.pretty(cause), onSome: (error) => String(error) })

/** Retries with backoff until it succeeds; for steps whose failure is the infrastructure's (database down). */
const persistently = <A, E, R>(effect: Effect.Effect<A, E, R>, what: string) =>
  effect.pipe(
    Effect.tapError((error) => Effect.logWarning(`${what} failed; retrying`, error)),
    Effect.retry(Schedule.exponential(Duration.millis(100)).pipe(Schedule.union(Schedule.spaced(Duration.seconds(5)))))
  )

/** Consumes until interrupted with one actor per partition; a failing subscription is reopened with backoff. */
export const consumeStream = <E, R>(options: StreamConsumerOptions<E, R>) =>
  Effect.gen(function* () {
    const log = yield* EventLog
    const config = yield* AppConfig
    const retry = Schedule.exponential(Duration.millis(50)).pipe(
      Schedule.intersect(Schedule.recurs((options.maxAttempts ?? 5) - 1))
    )
    // Defects count as failures here: a batch that is neither applied nor dead-lettered must not be passed over.
    const attempt = (batch: ReadonlyArray<Delivery>) =>
      Effect.sandbox(applyPartitionBatch(options.group, batch, options.apply))
    const applyAlone = (delivery: Delivery) =>
      attempt([delivery]).pipe(
        Effect.retry(retry),
        Effect.catchAll((cause) => persistently(deadLetter(options.group, delivery, describe(cause)), "dead-lettering"))
      )
    const receive = (_partition: string, batch: ReadonlyArray<Delivery>) =>
      attempt(batch).pipe(
        Effect.catchAll(() => Effect.forEach(batch, applyAlone, { discard: true })),
        Effect.zipRight(batch[batch.length - 1]!.ack),
        Effect.catchAllCause((cause) =>
          // Not committed or not acknowledged: the delivery comes again and the stored position skips what is done.
          Effect.logWarning(`consumer ${options.group} could not apply a batch; it will be redelivered`, cause)
        )
      )
    yield* Effect.scoped(
      Effect.gen(function* () {
        const actors = yield* makeActors({
          receive,
          maxBatch: options.batchSize ?? 500,
          linger: Duration.millis(config.consumerLingerMillis)
        })
        yield* log.subscribe(options).pipe(
          Stream.runForEachChunk((chunk) => {
            const byPartition = new Map<string, Array<Delivery>>()
            for (const delivery of chunk) {
              const key = `${delivery.topic}:${delivery.partition}`
              const deliveries = byPartition.get(key)
              if (deliveries === undefined) byPartition.set(key, [delivery])
              else deliveries.push(delivery)
            }
            return Effect.forEach(byPartition, ([key, deliveries]) => actors.tellAll(key, deliveries), {
              discard: true
            })
          })
        )
      })
    )
  }).pipe(
    Effect.tapErrorCause((cause) => Effect.logWarning(`consumer ${options.group} failed; reopening`, cause)),
    Effect.retry(Schedule.exponential(Duration.millis(200)).pipe(Schedule.union(Schedule.spaced(Duration.seconds(5)))))
  )

/** Effect-once consumption with a handler per delivery (see `consumeStream`). */
export const consumeOnce = <E, R>(options: ConsumeOptions<E, R>) =>
  consumeStream({
    group: options.group,
    topics: options.topics,
    ...(options.fromBeginning === undefined ? {} : { fromBeginning: options.fromBeginning }),
    ...(options.maxAttempts === undefined ? {} : { maxAttempts: options.maxAttempts }),
    ...(options.batchSize === undefined ? {} : { batchSize: options.batchSize }),
    apply: (batch) => Effect.forEach(batch, options.handle, { discard: true })
  })
