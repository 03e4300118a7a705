/**
 * Test wiring over the real infrastructure: a fresh PostgreSQL database per
 * suite (created and dropped), unique Kafka topic prefixes, and the
 * service's own layers configured through a ConfigProvider.
 */
import { ConfigProvider, Effect, Layer, Logger, LogLevel } from "effect"
import { randomBytes } from "node:crypto"
import pg from "pg"
import { inject } from "vitest"
import { PlatformCoreLive, PlatformLive } from "../../src/platform/Platform.js"

export type EventLogMode = "kafka" | "database"

export type PlatformServices = Layer.Layer.Success<typeof PlatformCoreLive>

export const uniqueName = (prefix: string) => `${prefix}_${Date.now().toString(36)}_${randomBytes(4).toString("hex")}`

const adminQuery = async (text: string) => {
  const client = new pg.Client({ connectionString: inject("postgresAdminUrl") })
  await client.connect()
  try {
    await client.query(text)
  } finally {
    await client.end()
  }
}

const databaseUrl = (name: string) => {
  const url = new URL(inject("postgresAdminUrl"))
  url.pathname = `/${name}`
  return url.toString()
}

/** A new, empty database for the life of the scope; answers its URL. */
export const freshDatabase = Effect.acquireRelease(
  Effect.promise(async () => {
    const name = uniqueName("guardrail_test")
    await adminQuery(`create database ${name}`)
    return name
  }),
  (name) => Effect.promise(() => adminQuery(`drop database if exists ${name} with (force)`))
).pipe(Effect.map(databaseUrl))

export const configLayer = (entries: Record<string, string>) =>
  Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(entries))))

/**
 * Suites sign up and sign in a lot, often concurrently, all from loopback: a
 * low scrypt cost (2^10, not 2^17), no signup limit and room for concurrent
 * hashes keep them fast. Suites that test those defences override these in `extra`.
 */
export const CHEAP_ACCOUNTS = {
  PASSWORD_SCRYPT_LOG_N: "10",
  SIGNUP_LIMIT: "1000000",
  PASSWORD_HASH_CONCURRENCY: "64"
} as const

/** Settings for a suite: its own database, and Kafka (with a unique topic prefix) or the database log. */
export const settingsFor = (mode: EventLogMode, databaseUrl: string, extra: Record<string, string> = {}) => ({
  DATABASE_URL: databaseUrl,
  DATA_DIR: `/tmp/${uniqueName("guardrail-data")}`,
  LOG_LEVEL: "warn",
  POLL_INTERVAL_MS: "50",
  ...CHEAP_ACCOUNTS,
  ...(mode === "kafka"
    ? { KAFKA_BROKERS: inject("kafkaBrokers"), KAFKA_TOPIC_PREFIX: `${uniqueName("t")}.`, KAFKA_PARTITIONS: "3" }
    : {}),
  ...extra
})

/** Warnings and errors only: access logs of every request would drown the test output. */
export const quietLogs = Logger.minimumLogLevel(LogLevel.Warning)

/** The platform layer over a fresh database, with the given event log. */
export const testPlatform = (mode: EventLogMode, extra: Record<string, string> = {}) =>
  Layer.unwrapScoped(
    Effect.map(freshDatabase, (url) =>
      PlatformLive.pipe(Layer.provide(configLayer(settingsFor(mode, url, extra))), Layer.merge(quietLogs))
    )
  )

/** The platform without the outbox relay, for tests that control when it runs. */
export const testPlatformCore = (mode: EventLogMode, extra: Record<string, string> = {}) =>
  Layer.unwrapScoped(
    Effect.map(freshDatabase, (url) => PlatformCoreLive.pipe(Layer.provide(configLayer(settingsFor(mode, url, extra)))))
  )
