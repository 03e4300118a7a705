/**
 * Stream consumers that apply each event exactly once, and never drop one.
 *
 * A subscription's deliveries are routed to one actor per topic partition
 * (Actors.ts), so a partition is processed in order and every key's state is
 * owned by one fiber. Each actor applies its deliveries in batches, one
 * database transaction per batch, which also
 *   - locks and advances the partition's position in
 *     `consumer_partition_positions`, keyed by the log it was read from
 *     (kind, log id, physical topic: see `LogSource`), so deliveries below it
 *     are skipped (a restart or rebalance re-reads what Kafka had not
 *     committed yet) and a position from another log never skips anything;
 *   - inserts the event ids into `processed_events` (an event the outbox
 *     relay published twice, at another offset, is skipped).
 * Effects, dedupe records and position commit together or not at all, so a
 * crash at any point neither loses nor double-applies an event. The log's own
 * acknowledgement follows the commit and only saves re-reading.
 *
 * Failures are sorted in two: an event the consumer cannot decode (its
 * handler fails with `UndecodableEvent`) is written to `dead_letters` with the
 * reason, in the same transaction that applies the rest of its batch; any
 * other failure (database, broker, a defect) is the infrastructure's and is
 * retried with capped exponential backoff for as long as it lasts, holding the
 * partition: nothing past the failing batch is applied or acknowledged.
 */
import { SqlClient, type Statement } from "@effect/sql"
import type { SqlError } from "@effect/sql/SqlError"
import { Cause, Data, Duration, Effect, Either, Option, ParseResult, Schedule, Schema, Stream } from "effect"
import { makeActors } from "./Actors.js"
import { keepRunning } from "./Background.js"
import { AppConfig } from "./Config.js"
import { type Delivery, EventLog, type SubscribeOptions } from "./EventLog.js"
import { eventDataError, storableHeaders, storableText, withEventIds } from "./PoisonEvents.js"

export interface StreamConsumerOptions<E, R> extends SubscribeOptions {
  /** Applies fresh deliveries of one partition, in order, inside the batch's transaction. */
  readonly apply: (batch: ReadonlyArray<Delivery>) => Effect.Effect<unknown, E, R>
  /** Most deliveries applied in one transaction (default 500). */
  readonly batchSize?: number
}

export interface ConsumeOptions<E, R> extends SubscribeOptions {
  readonly handle: (delivery: Delivery) => Effect.Effect<unknown, E, R>
  /** Most deliveries applied in one transaction (default 500). */
  readonly batchSize?: number
}

/** A handler's failure for an event it cannot decode: the one failure that dead-letters (with `reason`). */
export class UndecodableEvent extends Data.TaggedError("UndecodableEvent")<{
  readonly eventId: string
  readonly reason: string
}> {}

/** Decodes a delivery's JSON value with `schema`, failing with `UndecodableEvent` and the parse error. */
export const decodeDelivery = <A, I>(schema: Schema.Schema<A, I>) => {
  const decode = Schema.decodeUnknownEither(Schema.parseJson(schema))
  return (delivery: Pick<Delivery, "eventId" | "value">): Effect.Effect<A, UndecodableEvent> =>
    Either.match(decode(delivery.value), {
      onLeft: (error) =>
        Effect.fail(
          new UndecodableEvent({ eventId: delivery.eventId, reason: ParseResult.TreeFormatter.formatErrorSync(error) })
        ),
      onRight: Effect.succeed
    })
}

/**
 * Header of an event re-published by `npm run dead-letters -- replay`: the
 * group it was dead-lettered by. Other groups pass over it (they applied, or
 * dead-lettered, the original already).
 */
export const REPLAY_HEADER = "dead-letter-group"

const isForGroup = (group: string) => (delivery: Delivery) => {
  const target = delivery.headers?.[REPLAY_HEADER]
  return target === undefined || target === group
}

/** Rows that do not decode are a defect (the statement's own failure keeps its error channel). */
const rowsOf = <A, I>(schema: Schema.Schema<A, I>) => {
  const decode = Schema.decodeUnknown(schema)
  return (rows: ReadonlyArray<unknown>) => Effect.orDie(decode(rows))
}

/** A batch's new dedupe records, decoded at once (`event_id` is a uuid selected as text). */
const insertedRows = rowsOf(Schema.Array(Schema.Struct({ event_id: Schema.String })))
/** The partition's position row (the upsert always answers it); `next_offset` (bigint) as text. */
const positionRow = rowsOf(Schema.Tuple(Schema.Struct({ next_offset: Schema.String })))

/**
 * Records `eventIds` as applied by `group` (`processed_events`, pruned by the retention task); answers the ids
 * not recorded before. Run it in the transaction that applies them, so a transaction run again (its commit's
 * acknowledgement lost) applies nothing twice. `before`, a data-modifying `with` clause, runs in the same
 * statement (one round trip less).
 */
export const recordFirstTime = (group: string, eventIds: ReadonlyArray<string>, before?: Statement.Fragment) =>
  Effect.gen(function* () {
    if (eventIds.length === 0) return new Set<string>()
    const sql = yield* SqlClient.SqlClient
    const inserted = yield* sql`${before === undefined ? sql`` : sql`with stored as (${before})`}
      insert into processed_events ${sql.insert(eventIds.map((eventId) => ({ group_id: group, event_id: eventId })))}
      on conflict do nothing returning event_id::text as event_id`.pipe(Effect.flatMap(insertedRows))
    return new Set(inserted.map((row) => row.event_id))
  })

/** Inserts the dedupe records; answers the deliveries not applied before (first of each event id). */
const freshOf = (group: string, batch: ReadonlyArray<Delivery>, before?: Statement.Fragment) =>
  Effect.map(
    recordFirstTime(
      group,
      batch.map((delivery) => delivery.eventId),
      before
    ),
    (fresh) => batch.filter((delivery) => fresh.delete(delivery.eventId))
  )

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

/**
 * Locks the partition's position row and answers the next offset to apply.
 * A stored position beyond the log's end (the log was rebuilt under the same
 * id: a recreated topic, a truncated `event_log`) is logged and ignored: every
 * delivery is then applied, deduped by event id, rather than skipped.
 */
const lockPosition = (group: string, first: Delivery) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const { kind, logId, physicalTopic } = first.source
    const [position] = yield* sql`
      insert into consumer_partition_positions (group_id, log_kind, log_id, physical_topic, topic, partition, next_offset)
      values (${group}, ${kind}, ${logId}, ${physicalTopic}, ${first.topic}, ${first.partition}, 0)
      on conflict (group_id, log_kind, log_id, physical_topic, partition)
        do update set next_offset = consumer_partition_positions.next_offset
      returning next_offset::text as next_offset`.pipe(Effect.flatMap(positionRow))
    const next = BigInt(position.next_offset)
    const end = BigInt(first.logEnd)
    const annotations = { group, log_kind: kind, log_id: logId, topic: physicalTopic, partition: first.partition }
    if (end > BigInt(first.offset) && next > end) {
      yield* Effect.logWarning("consumer position is beyond the end of the log; applying from what the log holds").pipe(
        Effect.annotateLogs({ ...annotations, position: next.toString(), log_end: first.logEnd })
      )
      return 0n
    }
    if (kind === "kafka" && next > 0n && BigInt(first.offset) > next) {
      yield* Effect.logWarning("the log no longer holds events this consumer has not applied (log retention)").pipe(
        Effect.annotateLogs({ ...annotations, position: next.toString(), first_offset: first.offset })
      )
    }
    return next
  })

/** Advances the partition's position past `last` (a statement of its own, or a clause of the dedupe insert). */
const storePosition = (sql: SqlClient.SqlClient, group: string, last: Delivery) =>
  sql`update consumer_partition_positions
      set next_offset = ${(BigInt(last.offset) + 1n).toString()}, updated_at = now()
      where group_id = ${group} and log_kind = ${last.source.kind} and log_id = ${last.source.logId}
        and physical_topic = ${last.source.physicalTopic} and partition = ${last.partition}`

/** The first delivery of each event id (a copy published twice may come in the same batch). */
const firstOfEach = (deliveries: ReadonlyArray<Delivery>) => {
  const seen = new Set<string>()
  return deliveries.filter((delivery) => {
    if (seen.has(delivery.eventId)) return false
    seen.add(delivery.eventId)
    return true
  })
}

/**
 * Records undecodable deliveries (one row per group and event; a replay that fails again re-opens it). One row
 * per event id: PostgreSQL refuses an upsert that touches a row twice (21000), which held the partition.
 */
const insertDeadLetters = (group: string, dead: ReadonlyArray<Delivery>, reasons: ReadonlyMap<string, string>) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql`insert into dead_letters ${sql.insert(
      firstOfEach(dead).map((delivery) => ({
        group_id: group,
        topic: delivery.topic,
        key: storableText(delivery.key),
        event_id: delivery.eventId,
        value: storableText(delivery.value),
        headers: storableHeaders(delivery.headers),
        partition: delivery.partition,
        offset: delivery.offset,
        error: storableText(reasons.get(delivery.eventId) ?? "undecodable")
      }))
    )}
    on conflict (group_id, event_id) do update
      set error = excluded.error, value = excluded.value, headers = excluded.headers, partition = excluded.partition,
          "offset" = excluded."offset", created_at = now(), replayed_at = null`
  )

/**
 * One transaction over deliveries of ONE partition (in offset order): skip
 * what the stored position says is done, dedupe by event id, dead-letter the
 * deliveries in `undecodable` (event id to reason), apply the rest, advance
 * the position. Answers how many deliveries were applied.
 */
export const applyPartitionBatch = <E, R>(
  group: string,
  batch: ReadonlyArray<Delivery>,
  apply: (fresh: ReadonlyArray<Delivery>) => Effect.Effect<unknown, E, R>,
  undecodable: ReadonlyMap<string, string> = new Map()
): Effect.Effect<number, E | SqlError, R | SqlClient.SqlClient> =>
  Effect.gen(function* () {
    const first = batch[0]
    if (first === undefined) return 0
    const sql = yield* SqlClient.SqlClient
    return yield* sql.withTransaction(
      Effect.gen(function* () {
        const next = yield* lockPosition(group, first)
        const pending = batch.filter((delivery) => BigInt(delivery.offset) >= next)
        const last = pending[pending.length - 1]
        if (last === undefined) return 0
        const ours = pending.filter(isForGroup(group))
        const dead = ours.filter((delivery) => undecodable.has(delivery.eventId))
        const decodable = dead.length === 0 ? ours : ours.filter((delivery) => !undecodable.has(delivery.eventId))
        // The position moves with the dedupe records, in their statement: all of it commits with the effects or
        // none of it does.
        const stored = storePosition(sql, group, last)
        let fresh: ReadonlyArray<Delivery> = []
        if (decodable.length === 0) yield* stored
        else fresh = yield* freshOf(group, decodable, stored)
        if (fresh.length > 0) yield* apply(fresh)
        if (dead.length > 0) yield* insertDeadLetters(group, dead, undecodable)
        return fresh.length
      })
    )
  }).pipe(Effect.withSpan("Consumer.applyPartitionBatch", { attributes: { group, size: batch.length } }))

/** Further tries of one event the database refused for its content before it is dead-lettered. */
const POISON_RETRIES = 2

/** The undecodable event a failed batch names, if it is one of the batch's and not set aside yet. */
const undecodableOf = (
  cause: Cause.Cause<unknown>,
  batch: ReadonlyArray<Delivery>,
  known: ReadonlyMap<string, string>
) =>
  Option.filter(
    Cause.failureOption(cause),
    (error): error is UndecodableEvent =>
      error instanceof UndecodableEvent &&
      !known.has(error.eventId) &&
      batch.some((delivery) => delivery.eventId === error.eventId)
  )

/**
 * Consumes until interrupted with one actor per partition; a subscription that fails, dies or ends is reopened
 * with backoff (`keepRunning`).
 */
export const consumeStream = <E, R>(options: StreamConsumerOptions<E, R>) =>
  Effect.gen(function* () {
    const log = yield* EventLog
    const config = yield* AppConfig
    const backoff = Schedule.exponential(Duration.millis(config.consumerRetryBaseMillis)).pipe(
      Schedule.union(Schedule.spaced(Duration.millis(config.consumerRetryMaxMillis)))
    )
    // Each undecodable event found sets it aside and re-runs the batch without it (at most once per event);
    // defects count as failures, so a batch that is neither applied nor dead-lettered is never passed over.
    const attempt = (
      batch: ReadonlyArray<Delivery>,
      undecodable: ReadonlyMap<string, string>
    ): Effect.Effect<number, Cause.Cause<E | SqlError>, R | SqlClient.SqlClient> =>
      Effect.sandbox(applyPartitionBatch(options.group, batch, options.apply, undecodable)).pipe(
        Effect.catchAll((cause) =>
          Option.match(undecodableOf(cause, batch, undecodable), {
            onNone: () => Effect.fail(cause),
            onSome: (error) =>
              Effect.logError("event dead-lettered: it cannot be decoded").pipe(
                Effect.annotateLogs({ group: options.group, event_id: error.eventId, reason: error.reason }),
                Effect.zipRight(attempt(batch, new Map(undecodable).set(error.eventId, error.reason)))
              )
          })
        )
      )
    // Infrastructure failures hold the partition for as long as they last; a failure the event's content
    // causes (PoisonEvents.ts) ends the holding, so `settle` can find and dead-letter that event.
    const holding = (batch: ReadonlyArray<Delivery>, undecodable: ReadonlyMap<string, string>) =>
      attempt(batch, undecodable).pipe(
        Effect.tapError((cause) =>
          Effect.logWarning(`consumer ${options.group} could not apply a batch; retrying (partition held)`, cause)
        ),
        Effect.retry({ schedule: backoff, while: (cause) => eventDataError(cause) === undefined })
      )
    // A batch: apply its events one by one, so only the one that fails is set aside. One event: a few more
    // tries (a constraint may be a passing race), then it is dead-lettered (which itself holds until it commits).
    const deadLetter = (delivery: Delivery, undecodable: ReadonlyMap<string, string>, cause: Cause.Cause<unknown>) => {
      const reason = `could not apply: ${eventDataError(cause) ?? Cause.pretty(cause)}`
      return Effect.logError("event dead-lettered: the database refuses to apply it").pipe(
        Effect.annotateLogs({ group: options.group, event_id: delivery.eventId, reason }),
        Effect.zipRight(
          attempt([delivery], new Map(undecodable).set(delivery.eventId, reason)).pipe(
            Effect.tapError((failure) => Effect.logWarning(`consumer ${options.group} could not dead-letter`, failure)),
            Effect.retry(backoff),
            Effect.orDie
          )
        )
      )
    }
    const settle = (
      batch: ReadonlyArray<Delivery>,
      undecodable: ReadonlyMap<string, string>
    ): Effect.Effect<unknown, never, R | SqlClient.SqlClient> =>
      batch.length > 1
        ? holding(batch, undecodable).pipe(
            Effect.catchAll(() => Effect.forEach(batch, (delivery) => settle([delivery], undecodable)))
          )
        : holding(batch, undecodable).pipe(
            Effect.retry(backoff.pipe(Schedule.intersect(Schedule.recurs(POISON_RETRIES)))),
            Effect.catchAll((cause) => deadLetter(batch[0]!, undecodable, cause))
          )
    const receive = (_partition: string, received: ReadonlyArray<Delivery>) => {
      const { deliveries: batch, invalid } = withEventIds(received)
      return Effect.forEach(invalid, ([eventId, reason]) =>
        Effect.logError("event dead-lettered: it has no usable event id").pipe(
          Effect.annotateLogs({ group: options.group, event_id: eventId, reason })
        )
      ).pipe(
        Effect.zipRight(settle(batch, invalid)),
        Effect.zipRight(batch[batch.length - 1]!.ack),
        Effect.catchAllCause((cause) =>
          // Not acknowledged: the delivery comes again and the stored position skips what is done.
          Effect.logWarning(`consumer ${options.group} could not acknowledge a batch; it will be redelivered`, cause)
        )
      )
    }
    yield* Effect.scoped(
      Effect.gen(function* () {
        const actors = yield* makeActors({
          receive,
          maxBatch: options.batchSize ?? 500,
          linger: Duration.millis(config.consumerLingerMillis)
        })
        // A partition whose mailbox is full waits here, paused at the log, with what was fetched of it already;
        // its one drainer hands that over as the actor makes room, then resumes it. Waiting for room in the
        // reading loop instead stopped every other partition of the subscription behind the one held.
        const held = new Map<string, Array<Delivery>>()
        const drain = (key: string, waiting: Array<Delivery>, resume: Effect.Effect<void>) =>
          Effect.gen(function* () {
            for (let next = waiting.splice(0); next.length > 0; next = waiting.splice(0)) {
              yield* actors.tellAll(key, next)
            }
            held.delete(key)
            yield* resume
          })
        const dispatch = (key: string, deliveries: ReadonlyArray<Delivery>) => {
          const waiting = held.get(key)
          if (waiting !== undefined) {
            for (const delivery of deliveries) waiting.push(delivery)
            return Effect.void
          }
          return Effect.flatMap(actors.offerAvailable(key, deliveries), (rest) => {
            const first = rest[0]
            if (first === undefined) return Effect.void
            const overflow = [...rest]
            held.set(key, overflow)
            return Effect.zipRight(first.pause, Effect.forkScoped(drain(key, overflow, first.resume)))
          })
        }
        yield* log.subscribe(options).pipe(
          Stream.runForEachChunk((chunk) => {
            const byPartition = new Map<string, Array<Delivery>>()
            for (const delivery of chunk) {
              const key = `${delivery.topic}:${delivery.partition}`
              const deliveries = byPartition.get(key)
              if (deliveries === undefined) byPartition.set(key, [delivery])
              else deliveries.push(delivery)
            }
            return Effect.forEach(byPartition, ([key, deliveries]) => dispatch(key, deliveries), { discard: true })
          })
        )
      })
    )
  }).pipe((consume) => keepRunning(`consumer ${options.group}`, consume))

/** Effect-once consumption with a handler per delivery (see `consumeStream`). */
export const consumeOnce = <E, R>(options: ConsumeOptions<E, R>) =>
  consumeStream({
    group: options.group,
    topics: options.topics,
    ...(options.fromBeginning === undefined ? {} : { fromBeginning: options.fromBeginning }),
    ...(options.batchSize === undefined ? {} : { batchSize: options.batchSize }),
    apply: (batch) => Effect.forEach(batch, options.handle, { discard: true })
  })
