/**
 * The real service's consumers of `decisions` and `llm-usage` (analytics,
 * run-counters, budget-actions, llm-usage-store) behind a run of poison
 * messages, in both event logs: Kafka messages written with a raw producer
 * (no or a bad `event-id` header, a tombstone, bytes with NUL, no key) and
 * `event_log` rows inserted directly (headers that are not text), plus, in
 * both, values that are not JSON, of the wrong version or types, with a NUL
 * character in a field, too large for an index, or of a workspace that does
 * not exist. Each group dead-letters what it cannot apply and goes on: the
 * good events after them still reach the aggregates, the budget meter and
 * the usage store.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Kafka } from "kafkajs"
import { randomUUID } from "node:crypto"
import { inject } from "vitest"
import { AppConfig } from "../../src/platform/Config.js"
import { Topics } from "../../src/platform/Topics.js"
import { queryDatabase } from "../support/Database.js"
import { decisionValue } from "../support/TopicValues.js"
import { eventually } from "../support/Eventually.js"
import type { EventLogMode } from "../support/TestPlatform.js"
import { baseUrl, SERVER_OPTIONS, TestDatabaseUrl, testServerWithDatabase } from "../support/TestServer.js"
import { tenant } from "../support/Tenants.js"

interface Poison {
  readonly topic: string
  readonly key: string | null
  readonly value: string | Buffer | null
  /** Undefined: no `event-id` header (Kafka) or a fresh one. */
  readonly eventId?: string | null
  /** `event_log.headers` as JSON (database log only). */
  readonly headers?: string
}

const usage = (workspaceId: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    schema_version: 1,
    id: randomUUID(),
    workspace_id: workspaceId,
    api_key_id: null,
    principal_id: null,
    request_id: randomUUID(),
    kind: "customer_inference",
    model: "gpt-poison",
    prompt_tokens: 10,
    completion_tokens: 5,
    currency: "USD",
    cost_minor: 7,
    cost_usd_nanos: "70000000",
    effective_at: new Date().toISOString(),
    metadata: null,
    unpriced: false,
    agent_id: null,
    ...extra
  })

/** Poison both logs can carry (valid event ids, text values). */
const commonPoison = (ws: string): ReadonlyArray<Poison> => [
  { topic: Topics.decisions, key: ws, value: "not json {" },
  { topic: Topics.decisions, key: ws, value: decisionValue(ws, { schema_version: 99 }) },
  { topic: Topics.decisions, key: ws, value: decisionValue(ws, { latency_ms: "slow", policy_ids: 3 }) },
  { topic: Topics.decisions, key: ws, value: JSON.stringify({ schema_version: 1 }) },
  { topic: Topics.decisions, key: ws, value: decisionValue(ws, { domain: "a\u0000b" }) },
  { topic: Topics.decisions, key: ws, value: decisionValue(ws, { domain: "x".repeat(300_000) }) },
  { topic: Topics.decisions, key: ws, value: decisionValue("ws_does_not_exist") },
  { topic: Topics.llmUsage, key: ws, value: usage("ws_does_not_exist") },
  { topic: Topics.llmUsage, key: ws, value: usage(ws, { model: "m\u0000" }) },
  { topic: Topics.llmUsage, key: ws, value: usage(ws, { cost_usd_nanos: "9".repeat(60) }) }
]

/** Poison only a Kafka message can be: the database log's columns refuse it. */
const kafkaPoison = (ws: string): ReadonlyArray<Poison> => [
  { topic: Topics.decisions, key: ws, value: decisionValue(ws), eventId: null },
  { topic: Topics.decisions, key: ws, value: decisionValue(ws), eventId: "not-a-uuid" },
  { topic: Topics.decisions, key: ws, value: null },
  { topic: Topics.decisions, key: ws, value: Buffer.from([0x7b, 0x00, 0xff, 0x7d]) },
  { topic: Topics.decisions, key: null, value: "{}" },
  { topic: Topics.llmUsage, key: ws, value: usage(ws), eventId: null }
]

/** Poison only an `event_log` row can be: headers written by something other than `publish`. */
const databasePoison = (ws: string): ReadonlyArray<Poison> => [
  { topic: Topics.decisions, key: ws, value: decisionValue(ws, { domain: "numbers" }), headers: '{"attempt": 1}' },
  { topic: Topics.decisions, key: ws, value: "{}", headers: '"text"' },
  { topic: Topics.llmUsage, key: ws, value: "{}", headers: "[1, 2]" }
]

const GOOD = 3

const produce = (mode: EventLogMode, url: string, prefix: string, messages: ReadonlyArray<Poison>) =>
  mode === "kafka"
    ? Effect.acquireUseRelease(
        Effect.promise(async () => {
          const producer = new Kafka({ brokers: [inject("kafkaBrokers")], clientId: "poison-test" }).producer()
          await producer.connect()
          return producer
        }),
        (producer) =>
          Effect.promise(async () => {
            // One at a time, each on partition 0: the good events queue behind every poison one.
            for (const message of messages) {
              const eventId = message.eventId === undefined ? randomUUID() : message.eventId
              await producer.send({
                topic: prefix + message.topic,
                messages: [
                  {
                    partition: 0,
                    key: message.key,
                    value: message.value,
                    headers: eventId === null ? {} : { "event-id": eventId }
                  }
                ]
              })
            }
          }),
        (producer) => Effect.promise(() => producer.disconnect())
      )
    : Effect.forEach(
        messages,
        (message) =>
          queryDatabase(
            url,
            "insert into event_log (topic, key, event_id, value, headers) values ($1, $2, $3, $4, $5::jsonb)",
            [message.topic, message.key ?? "", randomUUID(), String(message.value), message.headers ?? "{}"]
          ),
        { discard: true }
      )

const suite = (mode: EventLogMode) =>
  layer(testServerWithDatabase(mode), SERVER_OPTIONS)(`poison messages (${mode} log)`, (it) => {
    it.effect(
      "each group dead-letters what it cannot apply and applies the good events after it",
      () =>
        Effect.gen(function* () {
          const url = yield* TestDatabaseUrl
          const config = yield* AppConfig
          const owner = yield* tenant(yield* baseUrl)
          const ws = owner.workspaceId
          const poison = [...commonPoison(ws), ...(mode === "kafka" ? kafkaPoison(ws) : databasePoison(ws))]
          const good: ReadonlyArray<Poison> = Array.from({ length: GOOD }, () => [
            { topic: Topics.decisions, key: ws, value: decisionValue(ws) },
            { topic: Topics.llmUsage, key: ws, value: usage(ws) }
          ]).flat()
          yield* produce(mode, url, config.kafkaTopicPrefix, [...poison, ...good])

          const counted = (text: string) =>
            eventually(
              Effect.flatMap(queryDatabase<{ n: string | null }>(url, text, [ws]), ([row]) =>
                Number(row?.n ?? 0) >= GOOD ? Effect.succeed(Number(row?.n)) : Effect.fail(row?.n)
              ),
              "90 seconds"
            )
          // Analytics counts the good decisions (and the one poison decision whose headers were only odd).
          const decisions = yield* counted(`select sum(value)::text as n from analytics_buckets
            where workspace_id = $1 and series = 'decisions' and granularity = 'day' and dims->>'domain' = 'orders'`)
          expect(decisions).toBe(GOOD)
          const actions = yield* counted(`select min(amount)::text as n from budget_meter_totals
            where workspace_id = $1 and meter = 'actions' and principal_id = ''`)
          expect(actions).toBeGreaterThanOrEqual(GOOD)
          const stored = yield* counted(
            "select count(*)::text as n from llm_usage_events where workspace_id = $1 and model = 'gpt-poison'"
          )
          expect(stored).toBe(GOOD)
          const spend = yield* counted(`select min(amount)::text as n from budget_meter_totals
            where workspace_id = $1 and meter = 'llm_spend' and principal_id = ''`)
          expect(spend).toBe(GOOD * 7)

          const dead = yield* queryDatabase<{ group_id: string; error: string }>(
            url,
            "select group_id, error from dead_letters order by group_id"
          )
          const reasons = (group: string) => dead.filter((row) => row.group_id === group).map((row) => row.error)
          expect(reasons("analytics").some((reason) => /^could not apply: 22/.test(reason))).toBe(true)
          expect(reasons("budget-actions").some((reason) => /^could not apply: 23503/.test(reason))).toBe(true)
          expect(reasons("llm-usage-store").some((reason) => /^could not apply: 23503/.test(reason))).toBe(true)
          expect(reasons("llm-usage-store").some((reason) => /^could not apply: 22/.test(reason))).toBe(true)
          if (mode === "kafka") {
            expect(reasons("run-counters")).toContain("no event-id header")
            expect(reasons("analytics")).toContain('event-id header is not a UUID: "not-a-uuid"')
          }
        }),
      240_000
    )
  })

suite("kafka")
suite("database")
