/**
 * A Kafka consumer with a backlog it applies slower than the broker serves
 * it (a stream worker back after a while away, a database that is slow):
 * what it reads ahead must stay bounded. Here about 200 MB of events wait on
 * one partition and the consumer's batches do not finish until the test lets
 * them. Before, the subscription buffered up to 1,024 fetched batches (each
 * up to 1 MiB) per consumer group, so the whole backlog was read into memory
 * within a second (and five groups could hold gigabytes); then, released,
 * every event is still applied exactly once.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Deferred, Effect, Layer, Ref } from "effect"
import { randomUUID } from "node:crypto"
import { consumeStream } from "../../src/platform/Consumer.js"
import { EventLog } from "../../src/platform/EventLog.js"
import { PlatformCoreLive } from "../../src/platform/Platform.js"
import { Topics } from "../../src/platform/Topics.js"
import { eventually } from "../support/Eventually.js"
import { configLayer, freshDatabase, settingsFor, uniqueName } from "../support/TestPlatform.js"

const ROUNDS = 500
const PER_ROUND = 200
const TOTAL = ROUNDS * PER_ROUND
const PAD = "x".repeat(2_000)
/** Growth of the heap past which the backlog is being read into memory (the backlog is ~200 MB). */
const LIMIT_BYTES = 80_000_000

describe("consumer backlog", () => {
  it.live(
    "what a consumer reads ahead of its batches stays bounded, and every event is applied once",
    () =>
      Effect.gen(function* () {
        const url = yield* freshDatabase
        const settings = settingsFor("kafka", url, { KAFKA_PARTITIONS: "1" })
        const context = yield* Layer.build(PlatformCoreLive.pipe(Layer.provide(configLayer(settings))))
        const log = Context.get(context, EventLog)
        for (let round = 0; round < ROUNDS; round++) {
          yield* log.publish(
            Array.from({ length: PER_ROUND }, (_, i) => ({
              eventId: randomUUID(),
              topic: Topics.runEvents,
              key: "backlog",
              value: JSON.stringify({ schema_version: 1, i, pad: PAD })
            }))
          )
        }

        const before = process.memoryUsage().heapUsed
        const gate = yield* Deferred.make<void>()
        const applied = yield* Ref.make(new Set<string>())
        yield* consumeStream({
          group: uniqueName("backlog"),
          topics: [Topics.runEvents],
          apply: (batch) =>
            Deferred.await(gate).pipe(
              Effect.zipRight(
                Ref.update(applied, (ids) => {
                  for (const delivery of batch) ids.add(delivery.eventId)
                  return ids
                })
              )
            )
        }).pipe(Effect.provide(context), Effect.forkScoped)

        // Nothing is applied until the gate opens: watch the heap while the consumer reads ahead. Before the fix
        // it passed the limit within a second; a bounded read-ahead stays below it however long it waits.
        const deadline = Date.now() + 5_000
        let growth = 0
        while (Date.now() < deadline && growth < LIMIT_BYTES) {
          yield* Effect.sleep("100 millis")
          growth = Math.max(growth, process.memoryUsage().heapUsed - before)
        }
        expect(growth).toBeLessThan(LIMIT_BYTES)

        yield* Deferred.succeed(gate, undefined)
        const seen = yield* eventually(
          Effect.flatMap(Ref.get(applied), (ids) =>
            ids.size >= TOTAL ? Effect.succeed(ids.size) : Effect.fail(ids.size)
          ),
          "120 seconds"
        )
        expect(seen).toBe(TOTAL)
      }).pipe(Effect.scoped),
    240_000
  )
})
