/**
 * A consumer group of the database log that reads several topics, one of
 * them quiet (no event yet, e.g. `review-events` for the analytics group of a
 * service whose reviewers never reviewed anything). Each poll asked for the
 * 500 rows after the lowest topic cursor, the quiet topic's; once 500 rows of
 * the other topics had been read past it, every poll answered those same
 * rows, none new: the group applied nothing more, for good, and polled
 * PostgreSQL in a tight loop. Now the rows of every topic are read from its
 * own cursor.
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
import { configLayer, freshDatabase, settingsFor, uniqueName } from "../support/TestPlatform.js"

describe("database log with a quiet topic", () => {
  it.live(
    "a group reading a topic that has no events applies every event of the others",
    () =>
      Effect.gen(function* () {
        const url = yield* freshDatabase
        const context = yield* Layer.build(
          PlatformCoreLive.pipe(Layer.provide(configLayer(settingsFor("database", url))))
        )
        const sql = Context.get(context, SqlClient.SqlClient)
        const log = Context.get(context, EventLog)
        const table = uniqueName("applied")
        yield* sql.unsafe(`create table ${table} (event_id uuid not null)`)
        yield* consumeStream({
          group: uniqueName("quiet"),
          topics: [Topics.runEvents, Topics.reviewEvents],
          apply: (batch) =>
            sql.unsafe(`insert into ${table} (event_id) select unnest($1::uuid[])`, [
              batch.map((delivery) => delivery.eventId)
            ])
        }).pipe(Effect.provide(context), Effect.forkScoped)

        const total = 1_200
        for (let round = 0; round < total / 100; round++) yield* log.publish(runEventBatch(100, `r${round}`, 4))
        const applied = yield* eventually(
          Effect.flatMap(
            queryDatabase<{ n: string }>(url, `select count(distinct event_id)::text as n from ${table}`),
            ([row]) => (Number(row!.n) >= total ? Effect.succeed(Number(row!.n)) : Effect.fail(row!.n))
          ),
          "60 seconds"
        )
        expect(applied).toBe(total)
      }).pipe(Effect.scoped),
    120_000
  )
})
