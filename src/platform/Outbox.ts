/**
 * Transactional outbox. `enqueue` writes event rows with the caller's SQL
 * connection, so they commit or roll back with the state change. The relay
 * publishes committed rows in id order to the event log and deletes them; a
 * failed publish leaves them for the next attempt, so an acknowledged event
 * is never lost (it may be published twice; consumers dedupe by event id).
 * One relay at a time holds a session advisory lock, so order holds across
 * processes. The lock's connection also runs the relay's statements and is
 * checked every second: a relay that lost its lock (its connection died)
 * stops, releases the connection and competes for the lock again on a new one.
 */
import { SqlClient } from "@effect/sql"
import { Clock, Data, Duration, Effect, Either, Layer, Option, Schedule, Schema } from "effect"
import { keepRunning } from "./Background.js"
import { AppConfig, isEmbeddedDatabase } from "./Config.js"
import { EventLog, type EventLogError } from "./EventLog.js"
import { uuidv7 } from "./Ids.js"
import { makeProcessSignal } from "./Signal.js"

const RELAY_LOCK = 7_211_002
const RELAY_BATCH = 500
const LOCK_CHECK_INTERVAL_MILLIS = 1_000
/**
 * Most bytes of values one publish carries. A broker reads at most `socket.request.max.bytes` (100 MiB by default)
 * in one request and closes the connection on a larger one, which is no refusal: a batch of large rows (audit
 * events of big documents) was sent again forever, and nothing behind it was published.
 */
const RELAY_BATCH_BYTES = 16 * 1024 * 1024

/** `items` in order, cut into runs of at most RELAY_BATCH_BYTES (a larger item alone). */
const byRequestSize = <A>(items: ReadonlyArray<A>, bytesOf: (item: A) => number) => {
  const runs: Array<Array<A>> = []
  let size = 0
  for (const item of items) {
    const bytes = bytesOf(item)
    const run = runs[runs.length - 1]
    if (run === undefined || size + bytes > RELAY_BATCH_BYTES) {
      runs.push([item])
      size = bytes
    } else {
      run.push(item)
      size += bytes
    }
  }
  return runs
}

export interface OutboxEvent {
  readonly topic: string
  readonly key: string
  /** A JSON-encodable value (already encoded by its Schema). */
  readonly value: unknown
  readonly eventId?: string
  readonly headers?: Readonly<Record<string, string>>
}

/** A row to relay, every column selected as text (`headers` is jsonb, decoded per row by `decodeHeaders`). */
const OutboxRow = Schema.Struct({
  id: Schema.String,
  event_id: Schema.String,
  topic: Schema.String,
  key: Schema.String,
  value: Schema.String,
  headers: Schema.String
})

/** A relay batch's rows, decoded at once (every column is non-null text, so only a broken driver fails it). */
type OutboxRow = typeof OutboxRow.Type

const decodeOutboxRows = Schema.decodeUnknown(Schema.Array(OutboxRow))

/** A row's headers: a row whose headers are not a string map (another version wrote it) is not published. */
const decodeHeaders = Schema.decodeEither(Schema.parseJson(Schema.Record({ key: Schema.String, value: Schema.String })))

/** The `dead_letters` group of outbox rows the event log refused (never published, so no consumer saw them). */
export const RELAY_GROUP = "outbox-relay"

/** `count(*)::text`, as the number it counts. */
const decodeCount = Schema.decodeUnknown(Schema.Tuple(Schema.Struct({ count: Schema.NumberFromString })))

export class Outbox extends Effect.Service<Outbox>()("platform/Outbox", {
  scoped: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    // Process-wide: the all-in-one's API thread writes rows that its stream-worker thread relays.
    const written = yield* makeProcessSignal("guardrail-outbox-written")

    /**
     * The insert of `events` (at least one) as a statement, to run alone or
     * as part of another (a `with` clause), so a state change and its events
     * take one round trip; run `written.fire` once it has committed.
     */
    const insertStatement = (events: ReadonlyArray<OutboxEvent>) =>
      sql`insert into outbox ${sql.insert(
        events.map((event) => ({
          event_id: event.eventId ?? uuidv7(),
          topic: event.topic,
          key: event.key,
          value: JSON.stringify(event.value),
          headers: JSON.stringify(event.headers ?? {})
        }))
      )}`

    /** Call inside the transaction of the state change. Answers the event ids. */
    const enqueue = (events: ReadonlyArray<OutboxEvent>) => {
      const identified = events.map((event) => ({ ...event, eventId: event.eventId ?? uuidv7() }))
      return identified.length === 0
        ? Effect.succeed([] as ReadonlyArray<string>)
        : insertStatement(identified).pipe(
            Effect.zipRight(written.fire),
            Effect.as(identified.map((event) => event.eventId) as ReadonlyArray<string>)
          )
    }

    const backlog = sql`select count(*)::text as count from outbox`.pipe(
      Effect.flatMap((rows) => Effect.orDie(decodeCount(rows))),
      Effect.map(([row]) => row.count)
    )

    return { enqueue, insertStatement, backlog, written }
  })
}) {}

/** Publishes one batch; answers how many rows it moved. Runs its SQL on the relay's own connection. */
const relayBatch = (onRelayConnection: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const log = yield* EventLog
    const rows = yield* onRelayConnection(sql`
      select id::text as id, event_id::text as event_id, topic, key, value, headers::text as headers
      from outbox order by outbox.id limit ${RELAY_BATCH}`).pipe(
      Effect.flatMap((rows) => Effect.orDie(decodeOutboxRows(rows)))
    )
    if (rows.length === 0) return 0
    // A row that cannot be read would stop the relay for good (and every event behind it): it is dead-lettered.
    const events: Array<{ readonly row: OutboxRow; readonly event: Parameters<typeof log.publish>[0][number] }> = []
    const unreadable: Array<readonly [OutboxRow, string]> = []
    for (const row of rows) {
      Either.match(decodeHeaders(row.headers), {
        onLeft: (error) => unreadable.push([row, `headers: ${error.message}`]),
        onRight: (headers) =>
          events.push({
            row,
            event: { eventId: row.event_id, topic: row.topic, key: row.key, value: row.value, headers }
          })
      })
    }
    // A record the log refuses (too large for the broker) would be refused forever and hold every event
    // behind it: the run goes again one row at a time, and the refused rows are dead-lettered.
    const publishRun = (run: ReadonlyArray<(typeof events)[number]>) =>
      log.publish(run.map(({ event }) => event)).pipe(
        Effect.as([] as ReadonlyArray<readonly [OutboxRow, string]>),
        Effect.catchIf(
          (error) => error.refused === true,
          () =>
            Effect.map(
              Effect.forEach(run, ({ event, row }) =>
                log.publish([event]).pipe(
                  Effect.as(Option.none<readonly [OutboxRow, string]>()),
                  Effect.catchIf(
                    (error: EventLogError) => error.refused === true,
                    (error) => Effect.succeed(Option.some([row, error.message] as const))
                  )
                )
              ),
              (outcomes) => outcomes.flatMap(Option.toArray)
            )
        )
      )
    const published = Effect.map(
      Effect.forEach(
        byRequestSize(events, ({ row }) => Buffer.byteLength(row.value) + Buffer.byteLength(row.key)),
        publishRun
      ),
      (refusals) => refusals.flat()
    )
    const refused = [...unreadable, ...(yield* published)]
    // No transaction (the relay's connection is not one): after a crash in between, the row is refused and
    // dead-lettered again (an upsert), then deleted.
    yield* onRelayConnection(
      Effect.gen(function* () {
        for (const [row, error] of refused) {
          yield* Effect.logError("outbox event dead-lettered: unreadable, or the event log refuses it").pipe(
            Effect.annotateLogs({ event_id: row.event_id, topic: row.topic, bytes: row.value.length, error })
          )
          yield* sql`insert into dead_letters ${sql.insert({
            group_id: RELAY_GROUP,
            topic: row.topic,
            key: row.key,
            event_id: row.event_id,
            value: row.value,
            headers: row.headers,
            error: `not published: ${error}`
          })} on conflict (group_id, event_id) do update
              set error = excluded.error, value = excluded.value, created_at = now(), replayed_at = null`
        }
        yield* sql`delete from outbox where id in ${sql.in(rows.map((row) => row.id))}`
      })
    )
    return rows.length
  })

class RelayLockLost extends Data.TaggedError("RelayLockLost")<{ readonly reason: string }> {}

/**
 * Takes the relay lock on a connection reserved for the scope and answers how
 * to run statements on that connection. The relay's own statements run there,
 * so a relay whose connection died (and with it the lock) fails its next
 * batch instead of publishing beside the relay that took over; `checkLock`
 * also asks PostgreSQL whether this session still holds the lock. With the
 * single-process embedded database there is no lock and no reservation.
 */
const holdRelayLock = Effect.gen(function* () {
  const config = yield* AppConfig
  if (isEmbeddedDatabase(config)) {
    return { onRelayConnection: <A, E, R>(effect: Effect.Effect<A, E, R>) => effect, checkLock: Effect.void }
  }
  const sql = yield* SqlClient.SqlClient
  const connection = yield* sql.reserve
  const tryLock = connection
    .executeValues(`select pg_try_advisory_lock(${RELAY_LOCK})`, [])
    .pipe(
      Effect.flatMap((rows) => (rows[0]?.[0] === true ? Effect.void : Effect.fail("held by another relay" as const)))
    )
  // Each attempt is its own short acquire, so the waits between attempts stay interruptible (shutdown).
  yield* Effect.acquireRelease(tryLock, () =>
    connection.executeValues(`select pg_advisory_unlock(${RELAY_LOCK})`, []).pipe(Effect.ignore)
  ).pipe(
    Effect.retry({
      while: (reason) => reason === "held by another relay",
      schedule: Schedule.spaced(Duration.seconds(1))
    })
  )
  // A bigint advisory lock key shows in pg_locks as classid (high 32 bits), objid (low 32 bits), objsubid 1.
  const checkLock = connection
    .executeValues(
      `select count(*)::int from pg_locks where locktype = 'advisory' and classid = 0 and objid = ${RELAY_LOCK}
         and objsubid = 1 and granted and pid = pg_backend_pid()`,
      []
    )
    .pipe(
      Effect.mapError((error) => new RelayLockLost({ reason: error.message })),
      Effect.flatMap((rows) =>
        rows[0]?.[0] === 1 ? Effect.void : Effect.fail(new RelayLockLost({ reason: "no longer held by this session" }))
      )
    )
  return {
    onRelayConnection: <A, E, R>(effect: Effect.Effect<A, E, R>) =>
      Effect.provideService(effect, SqlClient.TransactionConnection, [connection, 0] as const),
    checkLock
  }
})

/** The relay loop, forked for the life of the layer. */
export const OutboxRelayLive = Layer.scopedDiscard(
  Effect.gen(function* () {
    const config = yield* AppConfig
    const outbox = yield* Outbox
    const loop = Effect.gen(function* () {
      const { checkLock, onRelayConnection } = yield* holdRelayLock
      yield* Effect.logDebug("outbox relay holds the lock")
      let checkedAt = 0
      while (true) {
        // Cheap, but not per batch: the statements on the lock's connection already fail if it died.
        const now = yield* Clock.currentTimeMillis
        if (now - checkedAt >= LOCK_CHECK_INTERVAL_MILLIS) {
          yield* checkLock
          checkedAt = now
        }
        const moved = yield* relayBatch(onRelayConnection)
        if (moved < RELAY_BATCH) {
          yield* outbox.written.wait(config.pollIntervalMillis)
          // Writes come in bursts: a moment's wait sends a burst as one batch (one select, publish and delete).
          yield* Effect.sleep(Duration.millis(config.relayLingerMillis))
        }
      }
    }).pipe(Effect.scoped)
    // A lost lock or connection, or a defect, stops the relay: it takes the lock again after a backoff.
    yield* Effect.forkScoped(keepRunning("outbox relay", loop))
  })
)
