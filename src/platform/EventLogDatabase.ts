/**
 * The embedded event log: an append-only `event_log` table read by cursor
 * per consumer group, positions in `consumer_positions`. Appends take one
 * advisory lock so offsets commit, and become visible, in order. Intended for
 * a single process (embedded mode); several processes use Kafka.
 *
 * A stored cursor beyond the log's last offset means the log was rebuilt
 * under it (a restored or truncated `event_log`): the subscription logs it and
 * reads that topic from the beginning rather than skip what is there.
 */
import { SqlClient } from "@effect/sql"
import { Chunk, Effect, Layer, Schema, Stream } from "effect"
import { AppConfig } from "./Config.js"
import { type Delivery, EventLog, EventLogError, type LogSource, type OutgoingEvent } from "./EventLog.js"
import { makeSignal } from "./Signal.js"

const APPEND_LOCK = 7_211_001
const READ_BATCH = 500

/** A log row; `offset` (bigserial) and `event_id` (uuid) are selected as text, `headers` is jsonb. */
const LogRow = Schema.Struct({
  offset: Schema.String,
  topic: Schema.String,
  key: Schema.String,
  event_id: Schema.String,
  value: Schema.String,
  // Any JSON: a row written by other means than `publish` may hold anything here (see `parseHeaders`).
  headers: Schema.Unknown,
  created_at: Schema.DateFromSelf
})
type LogRow = typeof LogRow.Type

/** Rows that do not decode are a defect (the statement's own failure keeps its error channel). */
const rowsOf = <A, I>(schema: Schema.Schema<A, I>) => {
  const decode = Schema.decodeUnknown(schema)
  return (rows: ReadonlyArray<unknown>) => Effect.orDie(decode(rows))
}

const identityRows = rowsOf(Schema.Array(Schema.Struct({ id: Schema.String })))
const positionRows = rowsOf(Schema.Array(Schema.Struct({ topic: Schema.String, position: Schema.String })))
const headRow = rowsOf(Schema.Tuple(Schema.Struct({ head: Schema.String })))
/** A poll's rows, decoded at once, each with the log's end (`max("offset") + 1` as text). */
const pollRows = rowsOf(Schema.Array(Schema.extend(LogRow, Schema.Struct({ log_end: Schema.String }))))

/**
 * A row's headers as text values. `publish` writes a JSON object of strings;
 * anything else (a row inserted by hand or by another tool) is read as well as
 * it can be (non-text values as their JSON, a non-object as no headers) rather
 * than failing the poll, which would stop every group reading the log.
 */
const parseHeaders = (headers: unknown): Record<string, string> => {
  let parsed = headers
  if (typeof headers === "string") {
    try {
      parsed = JSON.parse(headers)
    } catch {
      return {}
    }
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return {}
  return Object.fromEntries(
    Object.entries(parsed).map(([name, value]) => [name, typeof value === "string" ? value : JSON.stringify(value)])
  )
}

export const EventLogDatabaseLive = Layer.effect(
  EventLog,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const config = yield* AppConfig
    const appended = yield* makeSignal
    const fail = (operation: string) => (cause: unknown) => new EventLogError({ operation, cause })
    const [identity] = yield* sql`select id::text as id from event_log_identity`.pipe(
      Effect.mapError(fail("identify")),
      Effect.flatMap(identityRows)
    )
    const logId = identity?.id ?? "unidentified"
    const sources = new Map<string, LogSource>()
    const sourceOf = (topic: string) => {
      let source = sources.get(topic)
      if (source === undefined) {
        source = { kind: "database", logId, physicalTopic: topic }
        sources.set(topic, source)
      }
      return source
    }

    const publish = (events: ReadonlyArray<OutgoingEvent>) =>
      events.length === 0
        ? Effect.void
        : sql
            .withTransaction(
              Effect.zipRight(
                sql`select pg_advisory_xact_lock(${APPEND_LOCK})`,
                sql`insert into event_log ${sql.insert(
                  events.map((event) => ({
                    topic: event.topic,
                    key: event.key,
                    event_id: event.eventId,
                    value: event.value,
                    headers: JSON.stringify(event.headers ?? {})
                  }))
                )}`
              )
            )
            .pipe(Effect.zipRight(appended.fire), Effect.mapError(fail("publish")))

    const storePosition = (group: string, topic: string, offset: string) =>
      sql`insert into consumer_positions (group_id, topic, position) values (${group}, ${topic}, ${offset})
          on conflict (group_id, topic) do update
          set position = greatest(consumer_positions.position, excluded.position), updated_at = now()`.pipe(
        Effect.asVoid,
        Effect.mapError(fail("ack"))
      )

    const subscribe = (options: { group: string; topics: ReadonlyArray<string>; fromBeginning?: boolean }) =>
      Stream.unwrap(
        Effect.gen(function* () {
          const stored = yield* sql`
            select topic, position::text as position from consumer_positions
            where group_id = ${options.group} and topic in ${sql.in(options.topics)}`.pipe(Effect.flatMap(positionRows))
          const [{ head }] = yield* sql`select coalesce(max("offset"), 0)::text as head from event_log`.pipe(
            Effect.flatMap(headRow)
          )
          const cursors = new Map<string, bigint>(
            options.topics.map((topic) => [topic, BigInt(options.fromBeginning === false ? head : "0")])
          )
          for (const row of stored) {
            if (BigInt(row.position) <= BigInt(head)) cursors.set(row.topic, BigInt(row.position))
            else {
              yield* Effect.logWarning(
                "stored log position is beyond the end of the log; reading from its beginning"
              ).pipe(
                Effect.annotateLogs({ group: options.group, topic: row.topic, position: row.position, log_end: head })
              )
              cursors.set(row.topic, 0n)
              yield* sql`update consumer_positions set position = 0, updated_at = now()
                         where group_id = ${options.group} and topic = ${row.topic}`
            }
          }

          // Topics the consumer cannot take more of yet: not read until resumed (a resume wakes the poll).
          const paused = new Set<string>()
          const resumed = yield* makeSignal
          const toDelivery =
            (logEnd: string) =>
            (row: LogRow): Delivery => ({
              eventId: row.event_id,
              topic: row.topic,
              key: row.key,
              value: row.value,
              headers: parseHeaders(row.headers),
              source: sourceOf(row.topic),
              logEnd,
              partition: 0,
              offset: row.offset,
              timestamp: new Date(row.created_at),
              ack: storePosition(options.group, row.topic, row.offset),
              pause: Effect.sync(() => paused.add(row.topic)),
              resume: Effect.suspend(() => (paused.delete(row.topic) ? resumed.fire : Effect.void))
            })

          // Each topic is read from its own cursor: with one query after the lowest cursor, a topic with no events
          // (its cursor left behind) made every poll answer the same 500 rows of the others once they were read,
          // and the group applied nothing more. Rows come in offset order; each topic's are contiguous.
          const poll = Effect.gen(function* () {
            const untilResumed = yield* resumed.arm
            const reading = [...cursors].filter(([topic]) => !paused.has(topic))
            const after = JSON.stringify(reading.map(([topic, cursor]) => ({ topic, after: cursor.toString() })))
            const rows = yield* sql`
              select r."offset"::text as "offset", r.topic, r.key, r.event_id::text as event_id, r.value, r.headers,
                     r.created_at, (select max("offset") + 1 from event_log)::text as log_end
              from jsonb_to_recordset(${after}::jsonb) as c(topic text, after bigint)
              cross join lateral (
                select l."offset", l.topic, l.key, l.event_id, l.value, l.headers, l.created_at from event_log l
                where l.topic = c.topic and l."offset" > c.after order by l."offset" limit ${READ_BATCH}
              ) r
              order by r."offset" limit ${READ_BATCH}`.pipe(Effect.flatMap(pollRows))
            for (const row of rows) cursors.set(row.topic, BigInt(row.offset))
            if (rows.length === 0) {
              yield* Effect.raceFirst(appended.wait(config.pollIntervalMillis), untilResumed(config.pollIntervalMillis))
            }
            return Chunk.fromIterable(rows.map(toDelivery(rows[rows.length - 1]?.log_end ?? "0")))
          })
          return Stream.repeatEffectChunk(poll.pipe(Effect.mapError(fail("poll"))))
        }).pipe(Effect.mapError((cause) => (cause instanceof EventLogError ? cause : fail("subscribe")(cause))))
      )

    const ping = sql`select 1`.pipe(Effect.asVoid, Effect.mapError(fail("ping")))

    const forget = (group: string) =>
      sql`delete from consumer_positions where group_id = ${group}`.pipe(Effect.asVoid, Effect.mapError(fail("forget")))

    return EventLog.of({ kind: "database", publish, subscribe, ping, forget })
  })
)
