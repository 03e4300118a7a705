/**
 * Kafka messages from another producer whose headers hold a NUL byte (a
 * binary trace header, say) and that the service's consumers must
 * dead-letter: one without an `event-id`, one whose value is not JSON. The
 * dead letter keeps its headers as jsonb, which refuses the `\u0000` escape
 * JSON.stringify writes for NUL; before, that refusal was retried forever
 * and held the partition, so no decision behind them was ever counted.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Kafka } from "kafkajs"
import { randomUUID } from "node:crypto"
import { inject } from "vitest"
import { AppConfig } from "../../src/platform/Config.js"
import { Topics } from "../../src/platform/Topics.js"
import { queryDatabase } from "../support/Database.js"
import { baseUrl, SERVER_OPTIONS, TestDatabaseUrl, testServerWithDatabase } from "../support/TestServer.js"
import { decisionsCounted, decisionValue } from "../support/TopicValues.js"
import { tenant } from "../support/Tenants.js"

layer(testServerWithDatabase("kafka"), SERVER_OPTIONS)("poison headers (kafka log)", (it) => {
  it.effect(
    "a dead-lettered message with a NUL byte in a header does not hold its partition",
    () =>
      Effect.gen(function* () {
        const url = yield* TestDatabaseUrl
        const config = yield* AppConfig
        const ws = (yield* tenant(yield* baseUrl)).workspaceId
        const notJson = randomUUID()
        const binary = { "trace-bin": Buffer.from([0x01, 0x00, 0x02]), "x-\u0000name": "v\u0000" }
        yield* Effect.acquireUseRelease(
          Effect.promise(async () => {
            const producer = new Kafka({ brokers: [inject("kafkaBrokers")], clientId: "poison-headers" }).producer()
            await producer.connect()
            return producer
          }),
          (producer) =>
            Effect.promise(() =>
              producer.send({
                topic: config.kafkaTopicPrefix + Topics.decisions,
                // All on partition 0, in order: the good decisions queue behind the two poison ones.
                messages: [
                  { partition: 0, key: ws, value: decisionValue(ws, { domain: "headers" }), headers: binary },
                  { partition: 0, key: ws, value: "not json {", headers: { ...binary, "event-id": notJson } },
                  {
                    partition: 0,
                    key: ws,
                    value: decisionValue(ws, { domain: "headers" }),
                    headers: { "event-id": randomUUID() }
                  },
                  {
                    partition: 0,
                    key: ws,
                    value: decisionValue(ws, { domain: "headers" }),
                    headers: { "event-id": randomUUID() }
                  }
                ]
              })
            ),
          (producer) => Effect.promise(() => producer.disconnect())
        )

        const counted = yield* decisionsCounted(url, ws, "headers", 2)
        expect(counted).toBe(2)

        const dead = yield* queryDatabase<{ error: string; headers: Record<string, string> }>(
          url,
          "select error, headers from dead_letters where group_id = 'analytics' order by id"
        )
        expect(dead.map((row) => row.error)).toEqual(["no event-id header", expect.stringMatching(/JSON/)])
        // The NUL is kept visible as U+FFFD, name and value alike.
        expect(dead[0]!.headers).toEqual({ "trace-bin": "\u0001\uFFFD\u0002", "x-\uFFFDname": "v\uFFFD" })
      }),
    120_000
  )
})
