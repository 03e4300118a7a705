/**
 * One partition a consumer cannot apply yet (its batches wait: a retry, a
 * slow tenant) with a backlog that fills its actor's mailbox must not stop
 * the consumer's other partitions. Before, the subscription's reading loop
 * waited for room in the full mailbox, so no other partition (with the
 * database log: no other topic) got anything until the held one moved.
 * Now only the held partition waits; once it is released, every event is
 * applied once, in order.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Deferred, Effect, Layer, Ref } from "effect"
import { randomUUID } from "node:crypto"
import { Partitioners } from "kafkajs"
import { consumeStream } from "../../src/platform/Consumer.js"
import { type Delivery, EventLog, type OutgoingEvent } from "../../src/platform/EventLog.js"
import { PlatformCoreLive } from "../../src/platform/Platform.js"
import { Topics } from "../../src/platform/Topics.js"
import { eventually } from "../support/Eventually.js"
import { configLayer, type EventLogMode, freshDatabase, settingsFor, uniqueName } from "../support/TestPlatform.js"

/** More than a mailbox (4,096) and a batch (500) hold, so the held partition's backlog overflows its mailbox. */
const HELD = 8_000
const FREE = 200
const ROUND = 500

/** A key Kafka's default partitioner puts on another of two partitions than `key`. */
const keyOnOtherPartition = (key: string) => {
  const partitionOf = Partitioners.DefaultPartitioner()
  const partitionMetadata = [0, 1].map((partitionId) => ({
    partitionErrorCode: 0,
    partitionId,
    leader: 0,
    replicas: [0],
    isr: [0]
  }))
  const of = (candidate: string) =>
    partitionOf({ topic: Topics.runEvents, partitionMetadata, message: { key: candidate, value: null } })
  for (let i = 0; ; i++) if (of(`free-${i}`) !== of(key)) return `free-${i}`
}

const events = (count: number, topic: string, key: string): Array<OutgoingEvent> =>
  Array.from({ length: count }, (_, i) => ({
    eventId: randomUUID(),
    topic,
    key,
    value: JSON.stringify({ schema_version: 1, i })
  }))

const heldPartitionCase = (mode: EventLogMode) =>
  Effect.gen(function* () {
    const url = yield* freshDatabase
    const settings = settingsFor(mode, url, mode === "kafka" ? { KAFKA_PARTITIONS: "2" } : {})
    const context = yield* Layer.build(PlatformCoreLive.pipe(Layer.provide(configLayer(settings))))
    const log = Context.get(context, EventLog)
    // Kafka: one topic, two keys on two partitions. The database log has one partition per topic: two topics.
    const heldKey = "held"
    const freeKey = mode === "kafka" ? keyOnOtherPartition(heldKey) : "free"
    const freeTopic = mode === "kafka" ? Topics.runEvents : Topics.decisions

    const gate = yield* Deferred.make<void>()
    const applied = yield* Ref.make<ReadonlyArray<Delivery>>([])
    const appliedOf = (key: string) =>
      Effect.map(Ref.get(applied), (deliveries) => deliveries.filter((delivery) => delivery.key === key))
    yield* consumeStream({
      group: uniqueName("held"),
      topics: mode === "kafka" ? [Topics.runEvents] : [Topics.runEvents, Topics.decisions],
      apply: (batch) =>
        Effect.zipRight(
          batch.some((delivery) => delivery.key === heldKey) ? Deferred.await(gate) : Effect.void,
          Ref.update(applied, (deliveries) => [...deliveries, ...batch])
        )
    }).pipe(Effect.provide(context), Effect.forkScoped)

    for (let sent = 0; sent < HELD; sent += ROUND) yield* log.publish(events(ROUND, Topics.runEvents, heldKey))
    yield* log.publish(events(FREE, freeTopic, freeKey))

    // The other partition is applied while the held one still waits.
    const free = yield* eventually(
      Effect.flatMap(appliedOf(freeKey), (seen) => (seen.length >= FREE ? Effect.succeed(seen) : Effect.fail(seen))),
      "60 seconds"
    )
    expect(free).toHaveLength(FREE)
    expect(yield* appliedOf(heldKey)).toHaveLength(0)

    yield* Deferred.succeed(gate, undefined)
    const held = yield* eventually(
      Effect.flatMap(appliedOf(heldKey), (seen) => (seen.length >= HELD ? Effect.succeed(seen) : Effect.fail(seen))),
      "90 seconds"
    )
    expect(new Set(held.map((delivery) => delivery.eventId)).size).toBe(HELD)
    // Each round's events in order, the rounds one after another: the partition's order held.
    const positions = held.map((delivery) => (JSON.parse(delivery.value) as { i: number }).i)
    expect(positions).toEqual(Array.from({ length: HELD }, (_, n) => n % ROUND))
  }).pipe(Effect.scoped)

describe("a held partition with a full mailbox", () => {
  it.live("Kafka: the consumer's other partition is applied meanwhile", () => heldPartitionCase("kafka"), 240_000)
  it.live("database log: the consumer's other topic is applied meanwhile", () => heldPartitionCase("database"), 240_000)
})
