/**
 * An outbox backlog whose rows are each within the broker's message size
 * but together past what the broker reads in one request
 * (`socket.request.max.bytes`, 100 MiB by default): say a burst of audit
 * events of large policy documents (before and after, up to 256 KiB each)
 * while the broker was away. The relay sent up to 500 rows in one request;
 * the broker closed the connection on it, which is no refusal the relay
 * recognises, so it sent the same request again forever and no event of any
 * topic was published after. Now a publish carries at most
 * RELAY_BATCH_BYTES of values.
 */
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Kafka, logLevel } from "kafkajs"
import { inject } from "vitest"
import { AppConfig } from "../../src/platform/Config.js"
import { Topics } from "../../src/platform/Topics.js"
import { eventually } from "../support/Eventually.js"
import { testPlatform } from "../support/TestPlatform.js"

const ROWS = 140
const ROW_BYTES = 800_000

const published = (topic: string) =>
  Effect.acquireUseRelease(
    Effect.promise(async () => {
      const admin = new Kafka({ brokers: [inject("kafkaBrokers")], logLevel: logLevel.NOTHING }).admin()
      await admin.connect()
      return admin
    }),
    (admin) =>
      Effect.promise(async () =>
        (await admin.fetchTopicOffsets(topic)).reduce((sum, partition) => sum + Number(partition.high), 0)
      ),
    (admin) => Effect.promise(() => admin.disconnect())
  )

layer(testPlatform("kafka"), { timeout: "180 seconds", excludeTestServices: true })("outbox request size", (it) => {
  it.effect(
    "a backlog larger than one broker request is published whole, nothing dead-lettered",
    () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const config = yield* AppConfig
        const value = JSON.stringify({ schema_version: 1, pad: "x".repeat(ROW_BYTES) })
        // One statement: the relay finds the whole backlog at once (~112 MB).
        yield* sql`insert into outbox (event_id, topic, key, value, headers)
                   select gen_random_uuid(), ${Topics.audit}, 'ws_' || (n % 3), ${value}, '{}'::jsonb
                   from generate_series(1, ${ROWS}) as n`
        yield* eventually(
          Effect.flatMap(sql<{ n: string }>`select count(*)::text as n from outbox`, ([row]) =>
            row!.n === "0" ? Effect.void : Effect.fail(row!.n)
          ),
          "90 seconds"
        )
        expect(yield* published(config.kafkaTopicPrefix + Topics.audit)).toBe(ROWS)
        const [dead] = yield* sql<{ n: string }>`select count(*)::text as n from dead_letters`
        expect(dead!.n).toBe("0")
      }),
    150_000
  )
})
