/**
 * The Kafka event log (kafkajs). The producer is idempotent and waits for all
 * in-sync replicas; topics are created at start-up with the configured
 * partition count. Subscriptions are consumer groups with auto-commit off:
 * `ack` marks an offset, and a committer flushes marked offsets every
 * COMMIT_INTERVAL and when the subscription closes. A delivery seen again
 * after a crash is skipped by the consumer's event-id dedupe (Consumer.ts).
 */
import { Chunk, Duration, Effect, Layer, LogLevel, Ref, Schedule, Stream } from "effect"
import { Kafka, type KafkaMessage, logLevel, Partitioners } from "kafkajs"
import { every } from "./Background.js"
import { AppConfig } from "./Config.js"
import {
  type Delivery,
  EventLog,
  EventLogError,
  type LogSource,
  type OutgoingEvent,
  type SubscribeOptions
} from "./EventLog.js"
import { applyKafkaIdleFix } from "./KafkaIdleFix.js"
import { allTopics } from "./Topics.js"
import { kafkaConnectionOf } from "./KafkaConnection.js"

const COMMIT_INTERVAL = Duration.millis(200)
const FETCH_MAX_WAIT_MS = 1_000

const kafkaLevelName: Record<number, string> = {
  [logLevel.ERROR]: "error",
  [logLevel.WARN]: "warning",
  [logLevel.INFO]: "info",
  [logLevel.DEBUG]: "debug"
}

const kafkaLevelOf = (level: LogLevel.LogLevel) =>
  level.ordinal >= LogLevel.Error.ordinal ? logLevel.ERROR : logLevel.WARN
/**
 * Fetched batches (each up to kafkajs's maxBytesPerPartition, 1 MiB) a subscription holds ahead of its consumer;
 * past it `eachBatch` waits, and so does the next fetch. The actors' mailboxes already keep each partition's
 * next batches ready. At 1,024 a backlog applied slower than it was fetched was read into memory whole (about
 * a gigabyte per consumer group): test/platform/consumer-backlog-memory.test.ts.
 */
const SUBSCRIPTION_BUFFER = 16

/** Broker errors that refuse a record for what it is, not for the broker's state. */
const REFUSALS = new Set(["MESSAGE_TOO_LARGE", "RECORD_LIST_TOO_LARGE", "INVALID_RECORD"])

/** True when the error (or one it wraps) is a refusal: the same records would be refused again. */
const isRefusal = (error: unknown): boolean => {
  for (let current = error, depth = 0; typeof current === "object" && current !== null && depth < 5; depth++) {
    const { type, cause } = current as { type?: unknown; cause?: unknown }
    if (typeof type === "string" && REFUSALS.has(type)) return true
    current = cause
  }
  return false
}

const headerText = (headers: KafkaMessage["headers"]): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (value !== undefined) out[name] = Array.isArray(value) ? String(value[0]) : String(value)
  }
  return out
}

export const EventLogKafkaLive = Layer.scoped(
  EventLog,
  Effect.gen(function* () {
    const config = yield* AppConfig
    const prefix = config.kafkaTopicPrefix
    const fail = (operation: string) => (cause: unknown) => new EventLogError({ operation, cause })
    const attempt = <A>(operation: string, run: () => Promise<A>) =>
      Effect.tryPromise({ try: run, catch: fail(operation) })

    applyKafkaIdleFix()
    const kafka = new Kafka({
      clientId: config.kafkaClientId,
      ...kafkaConnectionOf(config),
      // kafkajs logs in the service's JSON-lines format; it is chatty below warnings.
      logLevel: config.logLevel.ordinal >= LogLevel.Warning.ordinal ? kafkaLevelOf(config.logLevel) : logLevel.WARN,
      logCreator: () => (entry) => {
        const { message, timestamp: _timestamp, ...fields } = entry.log
        process.stdout.write(
          `${JSON.stringify({ time: new Date().toISOString(), level: kafkaLevelName[entry.level] ?? "info", message, logger: `kafkajs.${entry.namespace}`, ...fields })}\n`
        )
      },
      retry: { retries: 8, initialRetryTime: 100, maxRetryTime: 5_000 }
    })

    const admin = kafka.admin()
    yield* Effect.acquireRelease(
      attempt("connect", () => admin.connect()),
      () => Effect.promise(() => admin.disconnect())
    )
    // Positions are stored per cluster: a rebuilt cluster (new id) starts its own.
    const { clusterId } = yield* attempt("describe cluster", () => admin.describeCluster())
    // Another process may be creating the same topics: what matters is that they all exist afterwards.
    const wanted = allTopics.map((topic) => prefix + topic)
    yield* attempt("create topics", () =>
      admin
        .createTopics({
          waitForLeaders: true,
          topics: wanted.map((topic) => ({
            topic,
            numPartitions: config.kafkaPartitions,
            replicationFactor: config.kafkaReplicationFactor
          }))
        })
        .catch(async (error: unknown) => {
          const existing = new Set(await admin.listTopics())
          if (!wanted.every((topic) => existing.has(topic))) throw error
          return false
        })
    ).pipe(
      // Right after creation the broker may not yet host every partition it
      // just created ("does not host this topic-partition"): try again briefly.
      Effect.retry(Schedule.exponential(Duration.millis(200)).pipe(Schedule.intersect(Schedule.recurs(5))))
    )

    const producer = kafka.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      allowAutoTopicCreation: false,
      createPartitioner: Partitioners.DefaultPartitioner
    })
    yield* Effect.acquireRelease(
      attempt("connect", () => producer.connect()),
      () => Effect.promise(() => producer.disconnect())
    )

    const publish = (events: ReadonlyArray<OutgoingEvent>) => {
      if (events.length === 0) return Effect.void
      const byTopic = new Map<string, Array<OutgoingEvent>>()
      for (const event of events) {
        const batch = byTopic.get(event.topic)
        if (batch === undefined) byTopic.set(event.topic, [event])
        else batch.push(event)
      }
      return Effect.tryPromise({
        try: () =>
          producer.sendBatch({
            acks: -1,
            topicMessages: [...byTopic].map(([topic, batch]) => ({
              topic: prefix + topic,
              messages: batch.map((event) => ({
                key: event.key,
                value: event.value,
                headers: { ...event.headers, "event-id": event.eventId }
              }))
            }))
          }),
        catch: (cause) => new EventLogError({ operation: "publish", cause, refused: isRefusal(cause) })
      }).pipe(Effect.asVoid)
    }

    const subscribe = (options: SubscribeOptions): Stream.Stream<Delivery, EventLogError> =>
      Stream.asyncScoped<Delivery, EventLogError>(
        (emit) =>
          Effect.gen(function* () {
            const consumer = kafka.consumer({
              groupId: prefix + options.group,
              allowAutoTopicCreation: false,
              sessionTimeout: 10_000,
              heartbeatInterval: 1_000,
              // The broker answers a fetch as soon as a record arrives (minBytes 1); this is only how long
              // an empty fetch waits, so a long wait costs no freshness and spares idle polling.
              maxWaitTimeInMs: FETCH_MAX_WAIT_MS
            })
            // Offsets acked but not yet committed, keyed by topic and partition.
            const marked = yield* Ref.make(new Map<string, { topic: string; partition: number; offset: string }>())
            const commitMarked = Ref.getAndSet(marked, new Map()).pipe(
              Effect.flatMap((pending) =>
                pending.size === 0
                  ? Effect.void
                  : attempt("commit", () => consumer.commitOffsets([...pending.values()]))
              ),
              Effect.catchAll((error) =>
                Effect.logWarning("offset commit failed; events will be redelivered and deduped", error)
              )
            )
            yield* Effect.acquireRelease(
              attempt("connect", () => consumer.connect()),
              () => commitMarked.pipe(Effect.zipRight(Effect.promise(() => consumer.disconnect())))
            )
            yield* Effect.forkScoped(every("kafka offset commit", COMMIT_INTERVAL, commitMarked))

            const logicalTopic = (physical: string) => physical.slice(prefix.length)
            // A paused partition's fetched responses are dropped and fetched again after `resume` from the
            // last offset handed over. kafkajs refuses only before `run` (no delivery exists then).
            const flow = (operation: string, change: () => void) =>
              Effect.try({ try: change, catch: fail(operation) }).pipe(
                Effect.catchAll((error) => Effect.logWarning(`could not ${operation} a partition`, error))
              )
            consumer.on(consumer.events.CRASH, (event) => {
              if (!event.payload.restart) void emit.fail(fail("consume")(event.payload.error))
            })
            yield* attempt("subscribe", () =>
              consumer.subscribe({
                topics: options.topics.map((topic) => prefix + topic),
                fromBeginning: options.fromBeginning ?? true
              })
            )
            const sources = new Map<string, LogSource>()
            const sourceOf = (topic: string) => {
              let source = sources.get(topic)
              if (source === undefined) {
                source = { kind: "kafka", logId: clusterId, physicalTopic: topic }
                sources.set(topic, source)
              }
              return source
            }
            const deliveryOf = (
              topic: string,
              partition: number,
              highWatermark: string,
              message: KafkaMessage
            ): Delivery => {
              const next = (BigInt(message.offset) + 1n).toString()
              const { "event-id": eventId = "", ...rest } = headerText(message.headers)
              return {
                eventId,
                topic: logicalTopic(topic),
                key: message.key?.toString() ?? "",
                value: message.value?.toString() ?? "",
                headers: rest,
                source: sourceOf(topic),
                logEnd: highWatermark,
                partition,
                offset: message.offset,
                timestamp: new Date(Number(message.timestamp)),
                ack: Ref.update(marked, (pending) =>
                  new Map(pending).set(`${topic}:${partition}`, { topic, partition, offset: next })
                ),
                pause: flow("pause", () => consumer.pause([{ topic, partitions: [partition] }])),
                resume: flow("resume", () => consumer.resume([{ topic, partitions: [partition] }]))
              }
            }
            // A fetched batch goes downstream as one chunk: one hand-over per batch, not per message.
            yield* attempt("run", () =>
              consumer.run({
                autoCommit: false,
                eachBatchAutoResolve: true,
                eachBatch: async ({ batch, isRunning, isStale }) => {
                  if (!isRunning() || isStale() || batch.messages.length === 0) return
                  await emit.chunk(
                    Chunk.unsafeFromArray(
                      batch.messages.map((message) =>
                        deliveryOf(batch.topic, batch.partition, batch.highWatermark, message)
                      )
                    )
                  )
                }
              })
            )
          }),
        SUBSCRIPTION_BUFFER
      )

    const ping = attempt("ping", () => admin.describeCluster()).pipe(
      Effect.timeoutFail({ duration: Duration.seconds(3), onTimeout: () => fail("ping")("timed out") }),
      Effect.asVoid
    )

    const forget = (group: string) => attempt("forget", () => admin.deleteGroups([prefix + group])).pipe(Effect.asVoid)

    return EventLog.of({ kind: "kafka", publish, subscribe, ping, forget })
  })
)
