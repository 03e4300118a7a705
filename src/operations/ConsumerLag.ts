/**
 * Consumer lag per group, topic and partition, read at scrape time: with
 * Kafka, each active consumer group's committed offsets against the
 * partitions' high watermarks (a kafkajs admin client, connected on first
 * use); with the database log, each group's position against the log's last
 * offset of the topic (one partition, `0`).
 */
import { Effect, Option } from "effect"
import { type Admin, Kafka, logLevel } from "kafkajs"
import { AppConfig, isKafkaEnabled } from "../platform/Config.js"
import { allTopics } from "../platform/Topics.js"
import type { Gauge, GaugeSample } from "./Metrics.js"
import { kafkaConnectionOf } from "../platform/KafkaConnection.js"
import { databaseLogLag } from "./Repo.js"

const NAME = "guardrail_consumer_lag"
const HELP = "Events in the log not yet processed by a consumer group, by group, topic and partition."

const kafkaLag = (admin: Admin, prefix: string) =>
  Effect.tryPromise(async (): Promise<ReadonlyArray<GaugeSample>> => {
    const { groups } = await admin.listGroups()
    const ours = groups.filter((group) => group.groupId.startsWith(prefix)).map((group) => group.groupId)
    if (ours.length === 0) return []
    const described = await admin.describeGroups(ours)
    const active = described.groups.filter((group) => group.state === "Stable").map((group) => group.groupId)
    const topics = allTopics.map((topic) => prefix + topic)
    const existing = new Set(await admin.listTopics())
    const ends = new Map<string, Map<number, { high: number; low: number }>>()
    for (const topic of topics.filter((name) => existing.has(name))) {
      const offsets = await admin.fetchTopicOffsets(topic)
      ends.set(
        topic,
        new Map(offsets.map((entry) => [entry.partition, { high: Number(entry.high), low: Number(entry.low) }]))
      )
    }
    const samples: Array<GaugeSample> = []
    for (const groupId of active) {
      const committed = await admin.fetchOffsets({ groupId, topics: [...ends.keys()] })
      for (const { partitions, topic } of committed) {
        const end = ends.get(topic)
        if (end === undefined) continue
        // A group with no offset on any partition of a topic does not read it.
        if (partitions.every((partition) => partition.offset === "-1")) continue
        for (const partition of partitions) {
          const bounds = end.get(partition.partition)
          if (bounds === undefined) continue
          const position = partition.offset === "-1" ? bounds.low : Number(partition.offset)
          samples.push({
            labels: {
              group: groupId.slice(prefix.length),
              topic: topic.slice(prefix.length),
              partition: String(partition.partition)
            },
            value: Math.max(0, bounds.high - position)
          })
        }
      }
    }
    return samples
  })

const databaseLag = Effect.map(databaseLogLag, (rows) =>
  rows.map((row) => ({ labels: { group: row.group_id, topic: row.topic, partition: "0" }, value: row.lag }))
)

/** The consumer-lag gauge for this process's event log; scoped (the Kafka admin client is closed with the scope). */
export const makeConsumerLagGauge = Effect.gen(function* () {
  const config = yield* AppConfig
  if (!isKafkaEnabled(config)) return { name: NAME, help: HELP, read: databaseLag } satisfies Gauge
  const kafka = new Kafka({
    clientId: `${config.kafkaClientId}-metrics`,
    ...kafkaConnectionOf(config),
    logLevel: logLevel.NOTHING,
    retry: { retries: 2 }
  })
  let admin = Option.none<Admin>()
  yield* Effect.addFinalizer(() =>
    Option.match(admin, { onNone: () => Effect.void, onSome: (client) => Effect.promise(() => client.disconnect()) })
  )
  // One connection for every scrape: concurrent first scrapes each made a client, and all but the last leaked.
  const connecting = yield* Effect.makeSemaphore(1)
  const connected = Effect.suspend(() => {
    if (Option.isSome(admin)) return Effect.succeed(admin.value)
    const client = kafka.admin()
    return Effect.tryPromise(() => client.connect()).pipe(
      Effect.tap(() => Effect.sync(() => (admin = Option.some(client)))),
      Effect.as(client),
      // A connection abandoned (the scrape's time limit) or refused is closed, not left retrying.
      Effect.onExit((exit) => (exit._tag === "Success" ? Effect.void : Effect.promise(() => client.disconnect())))
    )
  }).pipe(connecting.withPermits(1))
  return {
    name: NAME,
    help: HELP,
    read: Effect.flatMap(connected, (client) => kafkaLag(client, config.kafkaTopicPrefix))
  } satisfies Gauge
})
