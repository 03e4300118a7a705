/**
 * A consumer on real Kafka whose PostgreSQL goes away for 5 seconds: the
 * service reaches the database through a loopback TCP proxy that the test
 * pauses (new connections refused, open ones cut), then resumes. Events keep
 * arriving on Kafka meanwhile. The consumer holds its partitions and retries
 * until the database is back: totals equal the events produced, and nothing
 * is dead-lettered.
 */
import { describe, expect, it } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer } from "effect"
import { inject } from "vitest"
import { consumeStream } from "../../src/platform/Consumer.js"
import { EventLog } from "../../src/platform/EventLog.js"
import { PlatformCoreLive } from "../../src/platform/Platform.js"
import { Topics } from "../../src/platform/Topics.js"
import { queryDatabase } from "../support/Database.js"
import { eventually } from "../support/Eventually.js"
import { runEventBatch } from "../support/RunEventBatches.js"
import { tcpProxy } from "../support/TcpProxy.js"
import { configLayer, freshDatabase, settingsFor, uniqueName } from "../support/TestPlatform.js"

const postgres = new URL(inject("postgresAdminUrl"))

const events = (count: number, tag: string) => runEventBatch(count, tag, 12)

describe("consumer across a database outage", () => {
  it.live(
    "PostgreSQL unreachable for 5 s: totals equal the events produced, no dead letters",
    () =>
      Effect.gen(function* () {
        const url = yield* freshDatabase
        const proxy = yield* tcpProxy({ host: postgres.hostname, port: Number(postgres.port || 5432) })
        const settings = settingsFor("kafka", proxy.through(url), { CONSUMER_RETRY_MAX_MS: "1000" })
        const context = yield* Layer.build(PlatformCoreLive.pipe(Layer.provide(configLayer(settings))))
        const sql = Context.get(context, SqlClient.SqlClient)
        const log = Context.get(context, EventLog)
        const table = uniqueName("applied")
        yield* sql.unsafe(`create table ${table} (event_id uuid not null)`)
        const group = uniqueName("outage")
        yield* consumeStream({
          group,
          topics: [Topics.runEvents],
          apply: (batch) =>
            sql.unsafe(`insert into ${table} (event_id) select unnest($1::uuid[])`, [
              batch.map((delivery) => delivery.eventId)
            ])
        }).pipe(Effect.provide(context), Effect.forkScoped)

        // Read past the proxy: the test's own view of the database stays up.
        const applied = Effect.map(
          queryDatabase<{ n: string; distinct: string }>(
            url,
            `select count(*)::text as n, count(distinct event_id)::text as distinct from ${table}`
          ),
          ([row]) => ({ rows: Number(row!.n), distinct: Number(row!.distinct) })
        )
        const untilApplied = (atLeast: number) =>
          eventually(
            Effect.flatMap(applied, (seen) => (seen.rows >= atLeast ? Effect.succeed(seen) : Effect.fail(seen))),
            "90 seconds"
          )

        yield* log.publish(events(300, "before"))
        yield* untilApplied(1)

        yield* proxy.pause
        for (let round = 0; round < 5; round++) yield* log.publish(events(100, `during-${round}`))
        yield* Effect.sleep("5 seconds") // the outage itself
        yield* proxy.resume

        yield* log.publish(events(200, "after"))
        const total = 300 + 500 + 200
        yield* untilApplied(total)
        yield* Effect.sleep("1 second")
        expect(yield* applied).toEqual({ rows: total, distinct: total })
        const dead = yield* queryDatabase<{ n: string }>(url, "select count(*)::text as n from dead_letters")
        expect(dead[0]!.n).toBe("0")
      }).pipe(Effect.scoped),
    180_000
  )
})
