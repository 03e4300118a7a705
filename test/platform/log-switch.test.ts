/**
 * One database, its event log switched under a consumer group: from the
 * database log to Kafka, then to another KAFKA_TOPIC_PREFIX, then back to a
 * database log whose offsets restarted (a truncated `event_log`). Positions
 * are stored per log (kind, log id, physical topic), and a position beyond
 * the log's end is detected, so no phase skips an event: the totals are
 * exactly the events produced.
 */
import { describe, expect, it } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer } from "effect"
import { consumeStream } from "../../src/platform/Consumer.js"
import { EventLog } from "../../src/platform/EventLog.js"
import { PlatformCoreLive } from "../../src/platform/Platform.js"
import { Topics } from "../../src/platform/Topics.js"
import { queryDatabase } from "../support/Database.js"
import { eventually } from "../support/Eventually.js"
import { runEventBatch } from "../support/RunEventBatches.js"
import { configLayer, type EventLogMode, freshDatabase, settingsFor, uniqueName } from "../support/TestPlatform.js"

const events = (count: number, tag: string) => runEventBatch(count, tag, 9)

describe("consumer positions across a switch of event log", () => {
  it.live(
    "database log -> Kafka -> another topic prefix -> a restarted database log: totals exact",
    () =>
      Effect.gen(function* () {
        const url = yield* freshDatabase
        const table = uniqueName("applied")
        const group = uniqueName("switch")
        const applied = Effect.map(
          queryDatabase<{ n: string; distinct: string }>(
            url,
            `select count(*)::text as n, count(distinct event_id)::text as distinct from ${table}`
          ),
          ([row]) => ({ rows: Number(row!.n), distinct: Number(row!.distinct) })
        )

        /** Runs the group over the given log until it has applied `total` events overall, then stops it. */
        const phase = (mode: EventLogMode, extra: Record<string, string>, produce: number, total: number) =>
          Effect.gen(function* () {
            const context = yield* Layer.build(
              PlatformCoreLive.pipe(Layer.provide(configLayer(settingsFor(mode, url, extra))))
            )
            const sql = Context.get(context, SqlClient.SqlClient)
            yield* sql.unsafe(`create table if not exists ${table} (event_id uuid not null)`)
            yield* consumeStream({
              group,
              topics: [Topics.runEvents],
              apply: (batch) =>
                sql.unsafe(`insert into ${table} (event_id) select unnest($1::uuid[])`, [
                  batch.map((delivery) => delivery.eventId)
                ])
            }).pipe(Effect.provide(context), Effect.forkScoped)
            yield* Context.get(context, EventLog).publish(events(produce, uniqueName("k")))
            yield* eventually(
              Effect.flatMap(applied, (seen) => (seen.rows >= total ? Effect.succeed(seen) : Effect.fail(seen))),
              "60 seconds"
            )
            yield* Effect.sleep("1 second")
            expect(yield* applied).toEqual({ rows: total, distinct: total })
          }).pipe(Effect.scoped)

        // The database log: 200 events, the stored position of (run-events, partition 0) ends past offset 200.
        yield* phase("database", {}, 200, 200)
        // Kafka (3 partitions, offsets from 0): an old position keyed by topic and partition alone would skip them.
        yield* phase("kafka", { KAFKA_TOPIC_PREFIX: `${uniqueName("a")}.` }, 90, 290)
        // Another prefix: new physical topics, offsets from 0 again.
        yield* phase("kafka", { KAFKA_TOPIC_PREFIX: `${uniqueName("b")}.` }, 90, 380)
        // The database log restarted under its consumers (restored, truncated): its offsets begin again at 1.
        yield* queryDatabase(url, "truncate event_log restart identity")
        yield* phase("database", {}, 50, 430)
        const positions = yield* queryDatabase<{ log_kind: string; physical_topic: string }>(
          url,
          "select distinct log_kind, physical_topic from consumer_partition_positions where group_id = $1",
          [group]
        )
        expect(positions.map((row) => row.log_kind).sort()).toEqual(["database", "kafka", "kafka"])
      }).pipe(Effect.scoped),
    240_000
  )
})
