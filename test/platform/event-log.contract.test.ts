/**
 * One contract, two event logs: the same suite runs against Kafka and
 * against the database log, both over real PostgreSQL. Events enter through
 * the transactional outbox, as the service writes them.
 */
import { describe, expect, it } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect, Fiber, Layer, type Scope, Stream } from "effect"
import { applyOnce, consumeOnce, UndecodableEvent } from "../../src/platform/Consumer.js"
import { EventLog } from "../../src/platform/EventLog.js"
import { Outbox, OutboxRelayLive } from "../../src/platform/Outbox.js"
import { Topics } from "../../src/platform/Topics.js"
import { eventually } from "../support/Eventually.js"
import { type EventLogMode, type PlatformServices, testPlatformCore, uniqueName } from "../support/TestPlatform.js"

const KEYS = 8

/** Writes `count` events through the outbox, `perTransaction` at a time; keys round-robin, `n` counts per key. */
const publishThroughOutbox = (count: number, perTransaction = 10) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const outbox = yield* Outbox
    for (let start = 0; start < count; start += perTransaction) {
      const batch = Array.from({ length: Math.min(perTransaction, count - start) }, (_, i) => {
        const index = start + i
        return {
          topic: Topics.runEvents,
          key: `key-${index % KEYS}`,
          value: { schema_version: 1, n: Math.floor(index / KEYS) }
        }
      })
      yield* sql.withTransaction(outbox.enqueue(batch))
    }
  })

/** A table of applied effects, one row per handler run, in application order. */
const effectsTable = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const table = uniqueName("effects")
  yield* sql.unsafe(
    `create table ${table} (seq bigserial primary key, event_id uuid not null, key text not null, n int not null)`
  )
  const record = (delivery: { eventId: string; key: string; value: string }) =>
    sql.unsafe(`insert into ${table} (event_id, key, n) values ($1, $2, $3)`, [
      delivery.eventId,
      delivery.key,
      (JSON.parse(delivery.value) as { n: number }).n
    ])
  const rows = sql.unsafe<{ event_id: string; key: string; n: number }>(
    `select event_id, key, n from ${table} order by seq`
  )
  return { record, rows }
})

const expectExactlyOnceInOrder = (rows: ReadonlyArray<{ event_id: string; key: string; n: number }>, total: number) => {
  expect(rows.length).toBe(total)
  expect(new Set(rows.map((row) => row.event_id)).size).toBe(total)
  for (let key = 0; key < KEYS; key++) {
    const ns = rows.filter((row) => row.key === `key-${key}`).map((row) => row.n)
    expect(ns).toEqual([...ns].sort((a, b) => a - b))
    expect(ns).toEqual(Array.from({ length: ns.length }, (_, i) => i))
  }
}

const waitForRows = (rows: Effect.Effect<ReadonlyArray<unknown>, unknown>, total: number) =>
  eventually(
    Effect.flatMap(rows, (current) =>
      current.length >= total ? Effect.succeed(current) : Effect.fail(`only ${current.length} of ${total} applied`)
    ),
    "60 seconds"
  )

const contract = (mode: EventLogMode) =>
  describe(`event log contract: ${mode}`, () => {
    /** Each case gets its own database and topics; its scope closes before the platform does. */
    const live = <A, E>(name: string, body: Effect.Effect<A, E, Scope.Scope | PlatformServices>) =>
      it.live(
        name,
        // Retries of a failing batch capped at 300 ms, so an outage of a dozen attempts takes seconds.
        () => Effect.scoped(body).pipe(Effect.provide(testPlatformCore(mode, { CONSUMER_RETRY_MAX_MS: "300" }))),
        120_000
      )

    live(
      "N events published are consumed exactly once, in order per key",
      Effect.gen(function* () {
        const effects = yield* effectsTable
        yield* Layer.build(OutboxRelayLive)
        yield* publishThroughOutbox(240)
        const consumer = yield* Effect.forkScoped(
          consumeOnce({ group: uniqueName("g"), topics: [Topics.runEvents], handle: effects.record })
        )
        const rows = yield* waitForRows(effects.rows, 240)
        expectExactlyOnceInOrder(rows as ReadonlyArray<{ event_id: string; key: string; n: number }>, 240)
        // Nothing more arrives after the total: no duplicates trickling in.
        yield* Effect.sleep("500 millis")
        expect((yield* effects.rows).length).toBe(240)
        yield* Fiber.interrupt(consumer)
      })
    )

    live(
      "a consumer killed mid-stream resumes from its committed position with no gap and no double effect",
      Effect.gen(function* () {
        const log = yield* EventLog
        const effects = yield* effectsTable
        const group = uniqueName("g")
        yield* Layer.build(OutboxRelayLive)
        yield* publishThroughOutbox(160)

        // First life: applies and acks 60 events, applies the 61st without acking, then dies.
        yield* log.subscribe({ group, topics: [Topics.runEvents] }).pipe(
          Stream.take(61),
          Stream.zipWithIndex,
          Stream.runForEach(([delivery, index]) =>
            applyOnce(group, [delivery], effects.record).pipe(Effect.zipRight(index < 60 ? delivery.ack : Effect.void))
          ),
          Effect.scoped
        )
        expect((yield* effects.rows).length).toBe(61)

        // Second life: the unacked event is delivered again and skipped by the dedupe.
        const consumer = yield* Effect.forkScoped(
          consumeOnce({ group, topics: [Topics.runEvents], handle: effects.record })
        )
        const rows = yield* waitForRows(effects.rows, 160)
        yield* Effect.sleep("500 millis")
        expectExactlyOnceInOrder(
          (yield* effects.rows) as ReadonlyArray<{ event_id: string; key: string; n: number }>,
          160
        )
        expect(rows.length).toBe(160)
        yield* Fiber.interrupt(consumer)
      })
    )

    live(
      "an event that cannot be decoded is dead-lettered with its reason and does not stop the others",
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const effects = yield* effectsTable
        const group = uniqueName("g")
        yield* Layer.build(OutboxRelayLive)
        yield* publishThroughOutbox(40)
        yield* Effect.forkScoped(
          consumeOnce({
            group,
            topics: [Topics.runEvents],
            handle: (delivery): Effect.Effect<unknown, unknown> =>
              delivery.key === "key-3" && (JSON.parse(delivery.value) as { n: number }).n === 2
                ? Effect.fail(new UndecodableEvent({ eventId: delivery.eventId, reason: "poison event" }))
                : effects.record(delivery)
          })
        )
        yield* waitForRows(effects.rows, 39)
        const dead = yield* eventually(
          Effect.flatMap(
            sql<{ key: string; error: string }>`select key, error from dead_letters where group_id = ${group}`,
            (rows) => (rows.length === 1 ? Effect.succeed(rows) : Effect.fail(rows.length))
          )
        )
        expect(dead).toEqual([{ key: "key-3", error: "poison event" }])
        expect((yield* effects.rows).length).toBe(39)
      })
    )

    live(
      "a handler failing for another reason is retried until it succeeds: nothing is dead-lettered or skipped",
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const effects = yield* effectsTable
        const group = uniqueName("g")
        yield* Layer.build(OutboxRelayLive)
        yield* publishThroughOutbox(40)
        // The handler fails its first 12 calls (a few seconds of backoff), as a database outage would.
        let failures = 0
        yield* Effect.forkScoped(
          consumeOnce({
            group,
            topics: [Topics.runEvents],
            handle: (delivery) =>
              Effect.suspend((): Effect.Effect<unknown, unknown> =>
                failures++ < 12 ? Effect.fail("database unavailable") : effects.record(delivery)
              )
          })
        )
        const rows = yield* waitForRows(effects.rows, 40)
        expectExactlyOnceInOrder(rows as ReadonlyArray<{ event_id: string; key: string; n: number }>, 40)
        const dead = yield* sql<{ n: string }>`select count(*)::text as n from dead_letters where group_id = ${group}`
        expect(dead[0]!.n).toBe("0")
      })
    )

    live(
      "the outbox keeps events written while no relay runs and delivers them all once it does",
      Effect.gen(function* () {
        const outbox = yield* Outbox
        const effects = yield* effectsTable
        const group = uniqueName("g")
        yield* Effect.forkScoped(consumeOnce({ group, topics: [Topics.runEvents], handle: effects.record }))
        yield* publishThroughOutbox(80)
        yield* Effect.sleep("300 millis")
        expect(yield* outbox.backlog).toBe(80)
        expect((yield* effects.rows).length).toBe(0)
        yield* Layer.build(OutboxRelayLive)
        const rows = yield* waitForRows(effects.rows, 80)
        expectExactlyOnceInOrder(rows as ReadonlyArray<{ event_id: string; key: string; n: number }>, 80)
        yield* eventually(Effect.flatMap(outbox.backlog, (n) => (n === 0 ? Effect.void : Effect.fail(n))))
      })
    )
  })

contract("database")
contract("kafka")
