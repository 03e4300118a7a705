/**
 * Event-log throughput and latency, outbox to consumer, for both
 * implementations over real PostgreSQL (and Kafka):
 *   npx tsx bench/event-log.ts [events=5000] [mode=both|kafka|database]
 * Needs PostgreSQL at BENCH_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/test)
 * and, for kafka, a broker at BENCH_KAFKA_BROKERS (default 127.0.0.1:9092).
 * Prints a JSON line per mode and saves it under bench/results/.
 */
import { SqlClient } from "@effect/sql"
import { ConfigProvider, Effect, Layer } from "effect"
import { mkdirSync, writeFileSync } from "node:fs"
import pg from "pg"
import { consumeOnce } from "../src/platform/Consumer.js"
import { Outbox, OutboxRelayLive } from "../src/platform/Outbox.js"
import { PlatformCoreLive } from "../src/platform/Platform.js"
import { Topics } from "../src/platform/Topics.js"

const total = Number(process.argv[2] ?? 5000)
const modes = (process.argv[3] ?? "both") === "both" ? ["database", "kafka"] : [process.argv[3]!]
const adminUrl = process.env["BENCH_POSTGRES_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"
const brokers = process.env["BENCH_KAFKA_BROKERS"] ?? "127.0.0.1:9092"
const BATCH = 50

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!

const admin = async (text: string) => {
  const client = new pg.Client({ connectionString: adminUrl })
  await client.connect()
  await client.query(text).finally(() => client.end())
}

const run = (mode: string, databaseUrl: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const outbox = yield* Outbox
    const sentAt = new Map<number, number>()
    const latencies: Array<number> = []
    let done: () => void = () => {}
    const finished = new Promise<void>((resolve) => (done = resolve))
    yield* Layer.build(OutboxRelayLive)
    yield* Effect.forkScoped(
      consumeOnce({
        group: `bench-${Date.now()}`,
        topics: [Topics.decisions],
        handle: (delivery) =>
          Effect.sync(() => {
            const index = (JSON.parse(delivery.value) as { index: number }).index
            latencies.push(performance.now() - sentAt.get(index)!)
            if (latencies.length === total) done()
          })
      })
    )
    const started = performance.now()
    for (let from = 0; from < total; from += BATCH) {
      const events = Array.from({ length: Math.min(BATCH, total - from) }, (_, i) => ({
        topic: Topics.decisions,
        key: `ws-${(from + i) % 16}`,
        value: { schema_version: 1, index: from + i }
      }))
      yield* sql.withTransaction(outbox.enqueue(events))
      const now = performance.now()
      for (const event of events) sentAt.set(event.value.index, now)
    }
    const acknowledged = performance.now()
    yield* Effect.promise(() => finished)
    const drained = performance.now()
    const sorted = [...latencies].sort((a, b) => a - b)
    return {
      mode,
      events: total,
      outbox_batch: BATCH,
      acknowledged_per_s: Math.round(total / ((acknowledged - started) / 1000)),
      end_to_end_per_s: Math.round(total / ((drained - started) / 1000)),
      latency_ms: { p50: Math.round(percentile(sorted, 50)), p99: Math.round(percentile(sorted, 99)) },
      database: databaseUrl.replace(/\/\/[^@]*@/, "//")
    }
  }).pipe(
    Effect.scoped,
    Effect.provide(
      PlatformCoreLive.pipe(
        Layer.provide(
          Layer.setConfigProvider(
            ConfigProvider.fromMap(
              new Map([
                ["DATABASE_URL", databaseUrl],
                ["DATA_DIR", "/tmp/guardrail-bench"],
                ["LOG_LEVEL", "warn"],
                ...(mode === "kafka"
                  ? ([
                      ["KAFKA_BROKERS", brokers],
                      ["KAFKA_TOPIC_PREFIX", `bench${Date.now()}.`]
                    ] as const)
                  : [])
              ])
            )
          )
        )
      )
    )
  )

const main = async () => {
  mkdirSync(new URL("results/", import.meta.url), { recursive: true })
  for (const mode of modes) {
    const name = `bench_event_log_${Date.now()}`
    await admin(`create database ${name}`)
    const url = new URL(adminUrl)
    url.pathname = `/${name}`
    try {
      const result = await Effect.runPromise(run(mode, url.toString()))
      const line = JSON.stringify({ bench: "event-log", at: new Date().toISOString(), ...result })
      console.log(line)
      writeFileSync(new URL(`results/event-log-${mode}.json`, import.meta.url), `${line}\n`)
    } finally {
      await admin(`drop database if exists ${name} with (force)`)
    }
  }
  process.exit(0)
}

void main()
