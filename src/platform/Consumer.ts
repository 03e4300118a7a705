/**
 * Effect-once consumption: each delivery's handler runs in one database
 * transaction together with a dedupe record of its event id, so a delivery
 * seen again (after a crash before the ack, or a duplicate publish) changes
 * nothing. A handler that keeps failing is dead-lettered, then acked, so one
 * bad event cannot stop a partition.
 */
import { SqlClient } from "@effect/sql"
import { Duration, Effect, Schedule, Stream } from "effect"
import { type Delivery, EventLog, type SubscribeOptions } from "./EventLog.js"

export interface ConsumeOptions<E, R> extends SubscribeOptions {
  readonly handle: (delivery: Delivery) => Effect.Effect<void, E, R>
  readonly maxAttempts?: number
}

/** Runs the handler unless this group already applied the event. Answers whether it ran. */
export const applyOnce = <E, R>(
  group: string,
  delivery: Delivery,
  handle: (delivery: Delivery) => Effect.Effect<void, E, R>
) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    return yield* sql.withTransaction(
      Effect.gen(function* () {
        const fresh =
          yield* sql`insert into processed_events (group_id, event_id) values (${group}, ${delivery.eventId})
                                 on conflict do nothing returning event_id`
        if (fresh.length === 0) return false
        yield* handle(delivery)
        return true
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

/** Consumes until interrupted; a failing subscription is reopened with backoff. */
export const consumeOnce = <E, R>(options: ConsumeOptions<E, R>) =>
  Effect.gen(function* () {
    const log = yield* EventLog
    const retry = Schedule.exponential(Duration.millis(50)).pipe(
      Schedule.intersect(Schedule.recurs((options.maxAttempts ?? 5) - 1))
    )
    const process = (delivery: Delivery) =>
      applyOnce(options.group, delivery, options.handle).pipe(
        Effect.retry(retry),
        Effect.catchAll((error) => deadLetter(options.group, delivery, error)),
        Effect.zipRight(delivery.ack)
      )
    yield* log.subscribe(options).pipe(Stream.runForEach(process))
  }).pipe(
    Effect.tapErrorCause((cause) => Effect.logWarning(`consumer ${options.group} failed; reopening`, cause)),
    Effect.retry(Schedule.exponential(Duration.millis(200)).pipe(Schedule.union(Schedule.spaced(Duration.seconds(5)))))
  )
