/**
 * The retention task's pruning of dedupe records and of the database event
 * log, on real Kafka and PostgreSQL. Records are aged by moving their
 * timestamps back past the window (8 days against the default 7):
 * - Kafka: a group's dedupe records are pruned, then the broker redelivers
 *   every event from offset 0 (its committed offsets reset): the stored
 *   positions skip them all, so nothing counts twice;
 * - database log: rows every group has read are pruned, rows a lagging group
 *   has not read stay, and so do that group's dedupe records; the lagging
 *   group then catches up with exact totals; a group that has not moved for
 *   the whole window (retired) is not waited for.
 */
import { describe, expect, it } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, type Scope } from "effect"
import { Kafka, logLevel } from "kafkajs"
import { randomUUID } from "node:crypto"
import { pruneEventPlumbing } from "../../src/operations/EventPruning.js"
import { consumeStream } from "../../src/platform/Consumer.js"
import { EventLog } from "../../src/platform/EventLog.js"
import { PlatformCoreLive } from "../../src/platform/Platform.js"
import { Topics } from "../../src/platform/Topics.js"
import { queryDatabase } from "../support/Database.js"
import { eventually } from "../support/Eventually.js"
import { configLayer, type EventLogMode, freshDatabase, settingsFor, uniqueName } from "../support/TestPlatform.js"

const WINDOWS = { processedEventsHours: 168, eventLogHours: 168, batchSize: 7 }

const events = (count: number) =>
  Array.from({ length: count }, (_, i) => ({
    eventId: randomUUID(),
    topic: Topics.runEvents,
    key: `key-${i % 5}`,
    value: JSON.stringify({ schema_version: 1, i })
  }))

const setUp = (mode: EventLogMode) =>
  Effect.gen(function* () {
    const url = yield* freshDatabase
    const settings = settingsFor(mode, url)
    const context = yield* Layer.build(PlatformCoreLive.pipe(Layer.provide(configLayer(settings))))
    const sql = Context.get(context, SqlClient.SqlClient)
    const table = uniqueName("applied")
    yield* sql.unsafe(`create table ${table} (grp text not null, event_id uuid not null)`)
    /** Runs a group until the scope closes. */
    const consume = (group: string): Effect.Effect<void, never, Scope.Scope> =>
      consumeStream({
        group,
        topics: [Topics.runEvents],
        apply: (batch) =>
          sql.unsafe(`insert into ${table} (grp, event_id) select $1, unnest($2::uuid[])`, [
            group,
            batch.map((delivery) => delivery.eventId)
          ])
      }).pipe(Effect.provide(context), Effect.forkScoped, Effect.asVoid)
    const totals = (group: string) =>
      Effect.map(
        queryDatabase<{ n: string; distinct: string }>(
          url,
          `select count(*)::text as n, count(distinct event_id)::text as distinct from ${table} where grp = $1`,
          [group]
        ),
        ([row]) => [Number(row!.n), Number(row!.distinct)]
      )
    const until = (group: string, total: number) =>
      eventually(
        Effect.flatMap(totals(group), (seen) => (seen[0]! >= total ? Effect.void : Effect.fail(seen))),
        "60 seconds"
      )
    const count = (query: string) => Effect.map(queryDatabase<{ n: string }>(url, query), ([row]) => Number(row!.n))
    const age = (query: string) => queryDatabase(url, query)
    return { url, settings, context, sql, consume, totals, until, count, age }
  })

describe("pruning the event plumbing", () => {
  it.live(
    "Kafka: dedupe records pruned, every event redelivered from offset 0: nothing counts twice",
    () =>
      Effect.gen(function* () {
        const { settings, context, sql, consume, totals, until, count, age } = yield* setUp("kafka")
        const group = uniqueName("g")
        yield* Context.get(context, EventLog).publish(events(100))
        yield* Effect.scoped(Effect.zipRight(consume(group), until(group, 100)))

        yield* age("update processed_events set processed_at = now() - interval '8 days'")
        const pruned = yield* pruneEventPlumbing(WINDOWS).pipe(Effect.provideService(SqlClient.SqlClient, sql))
        expect(pruned.processed_events).toBe(100)
        expect(yield* count("select count(*)::text as n from processed_events")).toBe(0)

        // The broker forgets what the group committed: it redelivers everything from the beginning.
        const admin = new Kafka({
          clientId: "pruning-test",
          brokers: [settings["KAFKA_BROKERS"]!],
          logLevel: logLevel.NOTHING
        }).admin()
        yield* Effect.acquireRelease(
          Effect.promise(() => admin.connect()),
          () => Effect.promise(() => admin.disconnect())
        )
        const prefix = settings["KAFKA_TOPIC_PREFIX"]!
        yield* eventually(
          Effect.tryPromise(() =>
            admin.resetOffsets({ groupId: `${prefix}${group}`, topic: `${prefix}${Topics.runEvents}`, earliest: true })
          ),
          "30 seconds"
        )
        const [committed] = yield* Effect.promise(() =>
          admin.fetchOffsets({ groupId: `${prefix}${group}`, topics: [`${prefix}${Topics.runEvents}`] })
        )
        expect(committed!.partitions.map((partition) => Math.max(0, Number(partition.offset)))).toEqual([0, 0, 0])
        yield* Context.get(context, EventLog).publish(events(10))
        yield* Effect.scoped(
          Effect.gen(function* () {
            yield* consume(group)
            yield* until(group, 110)
            yield* Effect.sleep("2 seconds")
          })
        )
        expect(yield* totals(group)).toEqual([110, 110])
      }).pipe(Effect.scoped),
    180_000
  )

  it.live(
    "database log: rows read by every group pruned; a lagging group keeps its rows and dedupe records, then catches up",
    () =>
      Effect.gen(function* () {
        const { context, sql, consume, totals, until, count, age } = yield* setUp("database")
        const log = Context.get(context, EventLog)
        const [ahead, lagging] = [uniqueName("ahead"), uniqueName("lagging")]
        yield* log.publish(events(30))
        yield* Effect.scoped(
          Effect.gen(function* () {
            yield* consume(lagging)
            yield* until(lagging, 30)
          })
        )
        yield* consume(ahead)
        yield* log.publish(events(20))
        yield* until(ahead, 50)
        // Positions are acknowledged right after each batch commits.
        yield* eventually(
          Effect.flatMap(count("select count(*)::text as n from consumer_positions where position >= 50"), (n) =>
            n === 1 ? Effect.void : Effect.fail(n)
          )
        )

        // A group that has not moved for longer than the window (retired, or a crashed process's own) holds nothing.
        yield* age(`insert into consumer_positions (group_id, topic, position, updated_at)
                    values ('retired', '${Topics.runEvents}', 5, now() - interval '8 days')`)
        yield* age("update event_log set created_at = now() - interval '8 days'")
        yield* age("update processed_events set processed_at = now() - interval '8 days'")
        // Idempotency keys past their 24 h window go; a fresh one stays.
        yield* age("insert into organizations (id, name) values ('org_prune', 'o')")
        yield* age(
          "insert into workspaces (id, organization_id, name, slug) values ('ws_prune', 'org_prune', 'w', 'w')"
        )
        yield* age(`insert into idempotency_keys (workspace_id, idempotency_key, request_digest, created_at)
                    values ('ws_prune', 'old', 'd', now() - interval '25 hours'), ('ws_prune', 'new', 'd', now())`)
        const pruned = yield* pruneEventPlumbing(WINDOWS).pipe(Effect.provideService(SqlClient.SqlClient, sql))
        expect(pruned).toEqual({ processed_events: 50, event_log: 30, idempotency_keys: 1 })
        expect(yield* count("select count(*)::text as n from idempotency_keys where idempotency_key = 'new'")).toBe(1)
        expect(yield* count(`select count(*)::text as n from processed_events where group_id = '${lagging}'`)).toBe(30)
        expect(yield* count(`select min("offset")::text as n from event_log`)).toBe(31)

        yield* consume(lagging)
        yield* until(lagging, 50)
        yield* Effect.sleep("1 second")
        expect(yield* totals(lagging)).toEqual([50, 50])
        expect(yield* totals(ahead)).toEqual([50, 50])
      }).pipe(Effect.scoped),
    120_000
  )
})
