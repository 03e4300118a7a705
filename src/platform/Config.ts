/**
 * Every setting the service reads, in one place. Values come only through
 * effect's `Config`, so tests swap them with a ConfigProvider.
 */
import { Config, Effect, LogLevel, Option, Redacted } from "effect"

const optionalRedacted = (name: string) => Config.option(Config.redacted(name))

const csv = (name: string) =>
  Config.string(name).pipe(
    Config.withDefault(""),
    Config.map((raw) =>
      raw
        .split(",")
        .map((part) => part.trim())
        .filter((part) => part.length > 0)
    )
  )

const logLevels: Record<string, LogLevel.LogLevel> = {
  trace: LogLevel.Trace,
  debug: LogLevel.Debug,
  info: LogLevel.Info,
  warn: LogLevel.Warning,
  warning: LogLevel.Warning,
  error: LogLevel.Error,
  fatal: LogLevel.Fatal,
  none: LogLevel.None
}

/** LOG_LEVEL: trace | debug | info | warn | error | fatal | none (any case). */
const logLevelConfig = Config.string("LOG_LEVEL").pipe(
  Config.withDefault("info"),
  Config.validate({
    message: `Expected one of ${Object.keys(logLevels).join(", ")}`,
    validation: (raw) => raw.toLowerCase() in logLevels
  }),
  Config.map((raw) => logLevels[raw.toLowerCase()]!)
)

export class AppConfig extends Effect.Service<AppConfig>()("platform/AppConfig", {
  effect: Effect.gen(function* () {
    const databaseUrl = yield* optionalRedacted("DATABASE_URL")
    const kafkaBrokers = yield* csv("KAFKA_BROKERS")
    return {
      host: yield* Config.string("HOST").pipe(Config.withDefault("0.0.0.0")),
      port: yield* Config.port("PORT").pipe(Config.withDefault(8080)),
      /** `None` selects the embedded PGlite database. */
      databaseUrl,
      /** Empty selects the database-backed event log. */
      kafkaBrokers,
      kafkaTopicPrefix: yield* Config.string("KAFKA_TOPIC_PREFIX").pipe(Config.withDefault("guardrail.")),
      kafkaPartitions: yield* Config.integer("KAFKA_PARTITIONS").pipe(Config.withDefault(6)),
      kafkaClientId: yield* Config.string("KAFKA_CLIENT_ID").pipe(Config.withDefault("guardrail-service")),
      dataDir: yield* Config.string("DATA_DIR").pipe(Config.withDefault("./.data")),
      embeddedDatabasePort: yield* Config.integer("EMBEDDED_DB_PORT").pipe(Config.withDefault(0)),
      databasePoolSize: yield* Config.integer("DATABASE_POOL_SIZE").pipe(Config.withDefault(10)),
      jwtSecret: yield* optionalRedacted("JWT_SECRET"),
      internalApiKey: yield* optionalRedacted("INTERNAL_API_KEY"),
      /** Ed25519 private JWK that signs decision receipts; generated under DATA_DIR when unset. */
      receiptSigningKey: yield* optionalRedacted("RECEIPT_SIGNING_KEY"),
      logLevel: yield* logLevelConfig,
      pollIntervalMillis: yield* Config.integer("POLL_INTERVAL_MS").pipe(Config.withDefault(100)),
      /** How long the outbox relay waits after a write wakes it, to publish what follows in the same batch. */
      relayLingerMillis: yield* Config.integer("OUTBOX_RELAY_LINGER_MS").pipe(Config.withDefault(10)),
      /** How long a consumer batch waits for more events after its first (fewer, larger transactions). */
      consumerLingerMillis: yield* Config.integer("CONSUMER_LINGER_MS").pipe(Config.withDefault(20)),
      kafkaReplicationFactor: yield* Config.integer("KAFKA_REPLICATION_FACTOR").pipe(Config.withDefault(1)),
      maxBodyBytes: yield* Config.integer("MAX_BODY_BYTES").pipe(Config.withDefault(1024 * 1024)),
      /**
       * Cap (UTF-8 bytes) on each text matched against policies: an event's `content` and each string in
       * its `params`; over it, 413 `content_too_large`. At most 4 MiB: RE2 runs in a fixed 16 MiB heap.
       */
      maxMatchContentBytes: yield* Config.integer("MAX_MATCH_CONTENT_BYTES").pipe(
        Config.withDefault(256 * 1024),
        Config.validate({
          message: "Expected an integer from 1 to 4194304",
          validation: (bytes) => bytes >= 1 && bytes <= 4 * 1024 * 1024
        })
      ),
      sessionTtlSeconds: yield* Config.integer("SESSION_TTL_SECONDS").pipe(Config.withDefault(12 * 60 * 60)),
      /** User ids that are platform admins (`is_platform_admin`, feature flags). */
      platformAdminUserIds: yield* csv("PLATFORM_ADMIN_USER_IDS"),
      /** Hosts that webhook and provider URLs may reach over plain http (https is always allowed). */
      httpAllowlist: yield* csv("HTTP_URL_ALLOWLIST"),
      /** First retry delay of a budget alert webhook (doubles per attempt, with jitter). */
      webhookRetryBaseMillis: yield* Config.integer("WEBHOOK_RETRY_BASE_MS").pipe(Config.withDefault(5_000)),
      /** Attempts of a budget alert webhook delivery before it is marked failed. */
      webhookMaxAttempts: yield* Config.integer("WEBHOOK_MAX_ATTEMPTS").pipe(Config.withDefault(8)),
      /** Bearer token of `GET /metrics`; unset turns the endpoint off (404). */
      metricsToken: yield* optionalRedacted("METRICS_TOKEN"),
      /** How often the stream worker's retention task sweeps expired records. */
      retentionIntervalSeconds: yield* Config.integer("RETENTION_INTERVAL_SECONDS").pipe(Config.withDefault(3600)),
      /** Rows deleted per statement by the retention task (short transactions, no long locks). */
      retentionBatchSize: yield* Config.integer("RETENTION_BATCH_SIZE").pipe(Config.withDefault(1000)),
      /** On shutdown, how long in-flight requests may take to finish before the server stops anyway. */
      shutdownDrainSeconds: yield* Config.integer("SHUTDOWN_DRAIN_SECONDS").pipe(Config.withDefault(20)),
      /** all-in-one over PostgreSQL: run the stream workers in a worker thread (their own event loop and core). */
      streamWorkerThread: yield* Config.boolean("STREAM_WORKER_THREAD").pipe(Config.withDefault(true)),
      /** Nice value of that thread (0-19): under CPU contention requests are answered first, consumers catch up after. */
      streamWorkerThreadNice: yield* Config.integer("STREAM_WORKER_THREAD_NICE").pipe(
        Config.withDefault(10),
        Config.validate({ message: "Expected 0 to 19", validation: (nice) => nice >= 0 && nice <= 19 })
      ),
      loginFailureLimit: yield* Config.integer("LOGIN_FAILURE_LIMIT").pipe(Config.withDefault(10)),
      loginFailureWindowSeconds: yield* Config.integer("LOGIN_FAILURE_WINDOW_SECONDS").pipe(Config.withDefault(60)),
      /** Analytics: an event older than this when it is aggregated is counted as late (dimension `late`). */
      analyticsLateGraceSeconds: yield* Config.integer("ANALYTICS_LATE_GRACE_SECONDS").pipe(Config.withDefault(300)),
      /** Key material of provider API keys at rest (AES-256-GCM); generated under DATA_DIR when unset. */
      gatewayEncryptionKey: yield* optionalRedacted("GATEWAY_ENCRYPTION_KEY"),
      /** How long the gateway waits for an upstream's response headers, or between body chunks (504 before headers). */
      gatewayUpstreamTimeoutMillis: yield* Config.integer("GATEWAY_UPSTREAM_TIMEOUT_MS").pipe(
        Config.withDefault(300_000)
      )
    }
  })
}) {}

export type AppSettings = AppConfig

export const isEmbeddedDatabase = (config: AppConfig) => Option.isNone(config.databaseUrl)
export const isKafkaEnabled = (config: AppConfig) => config.kafkaBrokers.length > 0
export const revealOption = (value: Option.Option<Redacted.Redacted<string>>) => Option.map(value, Redacted.value)
