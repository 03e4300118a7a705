/**
 * Tails one topic of the event log for operators:
 *
 *   npm run tail -- <topic> [--from-beginning] [--workspace ID]
 *
 * Prints one JSON line per message on stdout: topic, partition, offset, key,
 * event_id (the `event-id` header), timestamp and the value (JSON, checked
 * against the topic's Schema in src/TopicMessages.ts; a value that does not
 * match is still printed, with `schema_error`). Diagnostics go to stderr.
 *
 * With KAFKA_BROKERS it reads Kafka (KAFKA_TOPIC_PREFIX + topic) in a
 * throwaway consumer group that never commits offsets and is deleted on exit,
 * so real consumer groups are never disturbed. Without it, it reads the
 * database event log (`event_log` at DATABASE_URL) and writes no consumer
 * position. Stops cleanly on SIGINT/SIGTERM.
 */
import { NodeRuntime } from "@effect/platform-node"
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Cause, Chunk, Console, Effect, Either, Logger, Option, ParseResult, Redacted, Schema, Stream } from "effect"
import { Kafka, logLevel } from "kafkajs"
import { randomBytes } from "node:crypto"
import { hostname } from "node:os"
import { AppConfig, isKafkaEnabled } from "../src/platform/Config.js"
import { kafkaConnectionOf } from "../src/platform/KafkaConnection.js"
import { allTopics, type TopicName } from "../src/platform/Topics.js"
import { TopicMessages } from "../src/TopicMessages.js"

const USAGE = `usage: npm run tail -- <topic> [--from-beginning] [--workspace ID]
topics: ${allTopics.join(", ")}`

interface Options {
  readonly topic: TopicName
  readonly fromBeginning: boolean
  readonly workspace: string | undefined
}

class UsageError extends Schema.TaggedError<UsageError>()("UsageError", { message: Schema.String }) {}
class KafkaError extends Schema.TaggedError<KafkaError>()("KafkaError", { message: Schema.String }) {}

const kafkaError = (cause: unknown): KafkaError => {
  if (cause instanceof KafkaError) return cause
  if (Cause.isUnknownException(cause)) return kafkaError(cause.error)
  return new KafkaError({ message: cause instanceof Error ? cause.message : String(cause) })
}

const parseArguments = (args: ReadonlyArray<string>, prefix: string) =>
  Effect.gen(function* () {
    let topic: string | undefined
    let fromBeginning = false
    let workspace: string | undefined
    for (let i = 0; i < args.length; i++) {
      const arg = args[i]!
      if (arg === "--from-beginning") fromBeginning = true
      else if (arg === "--workspace") {
        workspace = args[++i]
        if (workspace === undefined || workspace === "") return yield* new UsageError({ message: "--workspace needs an id" })
      } else if (arg.startsWith("--workspace=")) workspace = arg.slice("--workspace=".length)
      else if (arg.startsWith("-")) return yield* new UsageError({ message: `unknown option ${arg}` })
      else if (topic === undefined) topic = arg
      else return yield* new UsageError({ message: `unexpected argument ${arg}` })
    }
    if (topic === undefined) return yield* new UsageError({ message: "name a topic" })
    // Accept the physical name too (guardrail.decisions).
    const logical = topic.startsWith(prefix) && allTopics.includes(topic.slice(prefix.length)) ? topic.slice(prefix.length) : topic
    if (!allTopics.includes(logical)) return yield* new UsageError({ message: `unknown topic ${topic}` })
    return { topic: logical as TopicName, fromBeginning, workspace } satisfies Options
  })

/** One message as read, before it is decoded. */
interface Message {
  readonly partition: number
  readonly offset: string
  readonly key: string
  readonly eventId: string | null
  readonly timestamp: Date
  readonly value: string
}

/** The printed line: the value parsed and checked against the topic's Schema; undefined when filtered out. */
const lineOf = (options: Options, message: Message): string | undefined => {
  let value: unknown = message.value
  let schemaError: string | undefined
  try {
    value = JSON.parse(message.value)
  } catch {
    schemaError = "value is not JSON"
  }
  if (schemaError === undefined) {
    const checked = Schema.decodeUnknownEither(TopicMessages[options.topic].value)(value)
    if (Either.isLeft(checked)) schemaError = ParseResult.TreeFormatter.formatErrorSync(checked.left)
  }
  if (options.workspace !== undefined) {
    const workspaceId =
      typeof value === "object" && value !== null ? (value as { workspace_id?: unknown }).workspace_id : undefined
    if (workspaceId !== options.workspace && message.key !== options.workspace) return undefined
  }
  return JSON.stringify({
    topic: options.topic,
    partition: message.partition,
    offset: message.offset,
    key: message.key,
    event_id: message.eventId,
    timestamp: message.timestamp.toISOString(),
    value,
    ...(schemaError === undefined ? {} : { schema_error: schemaError })
  })
}

/** Writes a line to stdout, waiting for the pipe to drain (a slow reader slows the tail, nothing is dropped). */
const writeLine = (line: string) =>
  Effect.async<void>((resume) => {
    if (process.stdout.write(`${line}\n`)) resume(Effect.void)
    else process.stdout.once("drain", () => resume(Effect.void))
  })

const ready = (what: string) => Console.error(`tailing ${what}`)

// ---- Kafka

const kafkaMessages = (config: AppConfig, options: Options) =>
  Stream.asyncScoped<Message, KafkaError>((emit) =>
    Effect.gen(function* () {
      const kafka = new Kafka({
        clientId: `${config.kafkaClientId}-tail`,
        ...kafkaConnectionOf(config),
        logLevel: logLevel.ERROR,
        logCreator: () => (entry) => process.stderr.write(`kafkajs: ${entry.log.message}\n`)
      })
      const topic = config.kafkaTopicPrefix + options.topic
      // A group of its own that never commits: consumers of the service never see it.
      const groupId = `${config.kafkaTopicPrefix}tail-${hostname()}-${process.pid}-${randomBytes(4).toString("hex")}`
      const consumer = kafka.consumer({ groupId, allowAutoTopicCreation: false, maxWaitTimeInMs: 100 })
      const admin = kafka.admin()
      yield* Effect.acquireRelease(
        Effect.tryPromise(() => Promise.all([consumer.connect(), admin.connect()])),
        () =>
          Effect.promise(async () => {
            await consumer.disconnect().catch(() => undefined)
            // Nothing was committed, so there is usually nothing to delete; tidy up if the broker kept it.
            await admin.deleteGroups([groupId]).catch(() => undefined)
            await admin.disconnect().catch(() => undefined)
          })
      )
      const existing = yield* Effect.tryPromise(() => admin.listTopics())
      if (!existing.includes(topic)) {
        return yield* new KafkaError({ message: `topic ${topic} does not exist (is KAFKA_TOPIC_PREFIX right?)` })
      }
      let announced = false
      consumer.on(consumer.events.FETCH_START, () => {
        if (!announced) {
          announced = true
          Effect.runFork(ready(`${topic} (kafka, group ${groupId})`))
        }
      })
      consumer.on(consumer.events.CRASH, (event) => {
        if (!event.payload.restart) void emit.fail(kafkaError(event.payload.error))
      })
      yield* Effect.tryPromise(() => consumer.subscribe({ topics: [topic], fromBeginning: options.fromBeginning }))
      yield* Effect.tryPromise(() =>
        consumer.run({
          autoCommit: false,
          eachMessage: async ({ partition, message }) => {
            const eventId = message.headers?.["event-id"]
            await emit.chunk(
              Chunk.of({
                partition,
                offset: message.offset,
                key: message.key?.toString() ?? "",
                eventId: eventId === undefined ? null : String(Array.isArray(eventId) ? eventId[0] : eventId),
                timestamp: new Date(Number(message.timestamp)),
                value: message.value?.toString() ?? ""
              })
            )
          }
        })
      )
    }).pipe(Effect.mapError(kafkaError))
  )

// ---- database event log

interface LogRow {
  readonly offset: string
  readonly key: string
  readonly event_id: string
  readonly value: string
  readonly created_at: Date
}

const databaseMessages = (config: AppConfig, options: Options) =>
  Stream.unwrap(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const [head] = yield* sql<{ head: string }>`select coalesce(max("offset"), 0)::text as head from event_log`
      let cursor = options.fromBeginning ? "0" : (head?.head ?? "0")
      yield* ready(`${options.topic} (database event log, after offset ${cursor})`)
      const poll = Effect.gen(function* () {
        const rows = yield* sql<LogRow>`
          select "offset"::text as "offset", key, event_id::text as event_id, value, created_at
          from event_log where topic = ${options.topic} and "offset" > ${cursor}
          order by event_log."offset" limit 500`
        if (rows.length === 0) yield* Effect.sleep(config.pollIntervalMillis)
        else cursor = rows[rows.length - 1]!.offset
        return Chunk.fromIterable(
          rows.map(
            (row): Message => ({
              partition: 0,
              offset: row.offset,
              key: row.key,
              eventId: row.event_id,
              timestamp: new Date(row.created_at),
              value: row.value
            })
          )
        )
      })
      return Stream.repeatEffectChunk(poll)
    })
  )

/**
 * The database of the event log: DATABASE_URL. The embedded PGlite serves a single connection,
 * which the running service holds, so it cannot be tailed from another process.
 */
const databaseLayer = (config: AppConfig) =>
  Option.match(config.databaseUrl, {
    onSome: (url) => Effect.succeed(url),
    onNone: (): Effect.Effect<Redacted.Redacted<string>, UsageError> =>
      Effect.fail(
        new UsageError({
          message:
            "no KAFKA_BROKERS and no DATABASE_URL: the embedded database serves only the service's own connection; " +
            "run the service with DATABASE_URL (PostgreSQL) or KAFKA_BROKERS to tail its events, and give the tail the same settings"
        })
      )
  }).pipe(
    Effect.map((url) => PgClient.layer({ url, maxConnections: 1, applicationName: "guardrail-tail", transformJson: false }))
  )

const program = Effect.gen(function* () {
  const config = yield* AppConfig
  const options = yield* parseArguments(process.argv.slice(2), config.kafkaTopicPrefix)
  const print = (message: Message) => {
    const line = lineOf(options, message)
    return line === undefined ? Effect.void : writeLine(line)
  }
  if (isKafkaEnabled(config)) {
    return yield* Stream.runForEach(kafkaMessages(config, options), print)
  }
  const database = yield* databaseLayer(config)
  return yield* Stream.runForEach(databaseMessages(config, options), print).pipe(Effect.provide(database))
})

// A reader that goes away (`| head`) ends the tail quietly.
process.stdout.on("error", () => process.exit(0))

program.pipe(
  Effect.catchTags({
    UsageError: (error) =>
      Console.error(`${error.message}\n${USAGE}`).pipe(Effect.zipRight(Effect.sync(() => (process.exitCode = 2)))),
    KafkaError: (error) =>
      Console.error(`tail: ${error.message}`).pipe(Effect.zipRight(Effect.sync(() => (process.exitCode = 1))))
  }),
  Effect.provide(AppConfig.Default),
  Effect.provide(Logger.replace(Logger.defaultLogger, Logger.withConsoleError(Logger.logfmtLogger))),
  NodeRuntime.runMain({ disablePrettyLogger: true })
)
