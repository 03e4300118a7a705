/**
 * The outbox across a Kafka outage, on a broker of its own (so stopping it
 * disturbs no other suite): events acknowledged while the broker is down are
 * delivered, once each and in order per key, after it comes back.
 */
import { describe, expect, it } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import { execFileSync } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { homedir, tmpdir } from "node:os"
import { join } from "node:path"
import { consumeOnce } from "../../src/platform/Consumer.js"
import { Outbox, OutboxRelayLive } from "../../src/platform/Outbox.js"
import { Topics } from "../../src/platform/Topics.js"
import { eventually } from "../support/Eventually.js"
import { testPlatformCore, uniqueName } from "../support/TestPlatform.js"

const script = new URL("../../scripts/kafka-local.sh", import.meta.url).pathname
const port = 20_000 + Math.floor(Math.random() * 9_000)
const home = mkdtempSync(join(tmpdir(), "guardrail-kafka-outage-"))
const brokerEnv = {
  ...process.env,
  KAFKA_LOCAL_HOME: home,
  KAFKA_LIB_DIR: join(homedir(), ".cache/guardrail-kafka/lib"),
  KAFKA_PORT: String(port),
  KAFKA_CONTROLLER_PORT: String(port + 1)
}
const broker = (command: "start" | "stop") =>
  Effect.sync(() => execFileSync("bash", [script, command], { env: brokerEnv, stdio: "inherit" }))

const enqueue = (from: number, count: number) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const outbox = yield* Outbox
    for (let index = from; index < from + count; index++) {
      yield* sql.withTransaction(
        outbox.enqueue([{ topic: Topics.runEvents, key: `key-${index % 4}`, value: { schema_version: 1, index } }])
      )
    }
  })

describe("outbox relay across a broker outage", () => {
  it.live(
    "delivers everything acknowledged while the broker was down, once, in order per key",
    () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const outbox = yield* Outbox
        const table = uniqueName("applied")
        yield* sql.unsafe(`create table ${table} (seq bigserial primary key, key text not null, index int not null)`)
        const applied = sql.unsafe<{ key: string; index: number }>(`select key, index from ${table} order by seq`)
        const countApplied = (total: number) =>
          eventually(
            Effect.flatMap(applied, (rows) => (rows.length >= total ? Effect.succeed(rows) : Effect.fail(rows.length))),
            "90 seconds"
          )

        yield* Layer.build(OutboxRelayLive)
        yield* Effect.forkScoped(
          consumeOnce({
            group: uniqueName("outage"),
            topics: [Topics.runEvents],
            handle: (delivery) =>
              sql.unsafe(`insert into ${table} (key, index) values ($1, $2)`, [
                delivery.key,
                (JSON.parse(delivery.value) as { index: number }).index
              ])
          })
        )
        yield* enqueue(0, 20)
        yield* countApplied(20)

        yield* broker("stop")
        yield* enqueue(20, 60) // acknowledged: committed to the outbox while Kafka is unreachable
        yield* Effect.sleep("2 seconds")
        expect(yield* outbox.backlog).toBeGreaterThan(0)
        expect((yield* applied).length).toBeLessThan(80)

        yield* broker("start")
        const rows = yield* countApplied(80)
        yield* Effect.sleep("1 second")
        expect((yield* applied).length).toBe(80)
        expect(new Set(rows.map((row) => row.index)).size).toBe(80)
        for (let key = 0; key < 4; key++) {
          const indexes = rows.filter((row) => row.key === `key-${key}`).map((row) => row.index)
          expect(indexes).toEqual([...indexes].sort((a, b) => a - b))
        }
        yield* eventually(Effect.flatMap(outbox.backlog, (n) => (n === 0 ? Effect.void : Effect.fail(n))))
      }).pipe(
        Effect.scoped,
        Effect.provide(testPlatformCore("kafka", { KAFKA_BROKERS: `127.0.0.1:${port}` })),
        Effect.ensuring(broker("stop")),
        Effect.ensuring(Effect.sync(() => rmSync(home, { recursive: true, force: true }))),
        (test) => Effect.zipRight(broker("start"), test)
      ),
    240_000
  )
})
