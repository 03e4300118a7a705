/**
 * Every setting the service reads, in one place. Values come only through
 * effect's `Config`, so tests swap them with a ConfigProvider.
 */
import { Config, Effect, LogLevel, Option, Redacted } from "effect"
import { availableParallelism } from "node:os"

const optionalRedacted = (name: string) => Config.option(Config.redacted(name))

/** Values shipped in examples and compose files, or typed in haste: never secrets. */
const PLACEHOLDER_SECRETS = new Set([
  "changeme",
  "change-me",
  "change_me",
  "change-me-in-production-please",
  "change-me-internal",
  "replace-me",
  "replaceme",
  "secret",
  "password",
  "dev-secret",
  "test",
  "xxx",
  "todo"
])

const MIN_SECRET_BYTES = 32

const isStrongSecret = (text: string) =>
  Buffer.byteLength(text, "utf8") >= MIN_SECRET_BYTES &&
  !PLACEHOLDER_SECRETS.has(text.trim().toLowerCase()) &&
  !/^(.)\1*$/.test(text)

/**
 * A secret the service generates or goes without when unset (an empty value
 * counts as unset, as compose passes an unset variable through). A set value
 * must be at least 32 bytes and not a known placeholder, or the service
 * refuses to start.
 */
const strongSecret = (name: string) =>
  optionalRedacted(name).pipe(
    Config.map(Option.filter((value) => Redacted.value(value).trim() !== "")),
    Config.validate({
      message:
        `${name} is a placeholder or shorter than ${MIN_SECRET_BYTES} bytes; ` +
        `set it to a random value (e.g. \`openssl rand -hex 32\`) or leave it unset`,
      validation: (value) => Option.isNone(value) || isStrongSecret(Redacted.value(value.value))
    })
  )

/** Compiled RE2 patterns the process keeps (catalog/UserRegex.ts); a workspace's allowance must fit in it. */
export const MAX_COMPILED_PATTERNS = 512

/** The longest AUDIT_RETENTION_DAYS: a hundred years. */
export const MAX_AUDIT_RETENTION_DAYS = 36_500

/**
 * Days audit rows are kept (0: for good; src/audit/Retention.ts reads it when its task starts). Far past a
 * hundred years the cutoff is no date, and every prune failed.
 */
export const AuditRetentionDays = Config.integer("AUDIT_RETENTION_DAYS").pipe(
  Config.withDefault(0),
  Config.validate({
    message: `AUDIT_RETENTION_DAYS must be from 0 to ${MAX_AUDIT_RETENTION_DAYS}`,
    validation: (value) => value >= 0 && value <= MAX_AUDIT_RETENTION_DAYS
  })
)

const positiveInteger = (name: string, fallback: number) =>
  Config.integer(name).pipe(
    Config.withDefault(fallback),
    Config.validate({ message: `${name} must be at least 1`, validation: (value) => value >= 1 })
  )

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

/** How the service authenticates to Kafka and encrypts the connection (all off by default). */
const kafkaSecurityConfig = Config.all({
  ssl: Config.boolean("KAFKA_SSL").pipe(Config.withDefault(false)),
  /** PEM file of the CA that signed the brokers' certificates; unset trusts Node's default CAs. */
  sslCaFile: Config.option(Config.string("KAFKA_SSL_CA_FILE")),
  saslMechanism: Config.option(Config.literal("plain", "scram-sha-256", "scram-sha-512")("KAFKA_SASL_MECHANISM")),
  saslUsername: Config.option(Config.string("KAFKA_SASL_USERNAME")),
  saslPassword: optionalRedacted("KAFKA_SASL_PASSWORD")
}).pipe(
  Config.validate({
    message: "KAFKA_SASL_MECHANISM needs KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD",
    validation: (security) =>
      Option.isNone(security.saslMechanism) ||
      (Option.isSome(security.saslUsername) && Option.isSome(security.saslPassword))
  })
)

export class AppConfig extends Effect.Service<AppConfig>()("platform/AppConfig", {
  effect: Effect.gen(function* () {
    const databaseUrl = yield* optionalRedacted("DATABASE_URL")
    const kafkaBrokers = yield* csv("KAFKA_BROKERS")
    const databasePoolSize = yield* Config.integer("DATABASE_POOL_SIZE").pipe(Config.withDefault(10))
    const maxConcurrentReports = yield* positiveInteger(
      "MAX_CONCURRENT_REPORTS",
      Math.max(1, Math.floor(databasePoolSize / 3))
    )
    return {
      host: yield* Config.string("HOST").pipe(Config.withDefault("0.0.0.0")),
      /** 0: a free port the OS picks as the server binds it (the URL is logged), for tests and side-by-side runs. */
      port: yield* Config.integer("PORT").pipe(
        Config.withDefault(8080),
        Config.validate({
          message: "Expected a network port value (0 to 65535)",
          validation: (port) => port >= 0 && port <= 65_535
        })
      ),
      /** `None` selects the embedded PGlite database. */
      databaseUrl,
      /** Empty selects the database-backed event log. */
      kafkaBrokers,
      kafkaTopicPrefix: yield* Config.string("KAFKA_TOPIC_PREFIX").pipe(Config.withDefault("guardrail.")),
      kafkaPartitions: yield* Config.integer("KAFKA_PARTITIONS").pipe(Config.withDefault(6)),
      kafkaClientId: yield* Config.string("KAFKA_CLIENT_ID").pipe(Config.withDefault("guardrail-service")),
      kafkaSecurity: yield* kafkaSecurityConfig,
      dataDir: yield* Config.string("DATA_DIR").pipe(Config.withDefault("./.data")),
      embeddedDatabasePort: yield* Config.integer("EMBEDDED_DB_PORT").pipe(Config.withDefault(0)),
      databasePoolSize,
      /**
       * Report queries (aggregates over history, endpoints annotated `ReportQuery`) served at once; more wait
       * their turn, so slow reports never hold every database connection the decisions need (docs/limits.md).
       */
      maxConcurrentReports,
      /**
       * Of those, the most one workspace's reports hold at once; its others wait for its own turn, so one workspace's
       * slow reports never hold every report permit (docs/limits.md). Never more than MAX_CONCURRENT_REPORTS.
       */
      maxConcurrentReportsPerWorkspace: yield* positiveInteger(
        "MAX_CONCURRENT_REPORTS_PER_WORKSPACE",
        Math.ceil(maxConcurrentReports / 2)
      ).pipe(Config.map((permits) => Math.min(permits, maxConcurrentReports))),
      /** Longest a statement on DATABASE_URL may run (a lock wait included); 0 lets it run for ever. Not for migrations. */
      databaseStatementTimeoutMillis: yield* Config.integer("DATABASE_STATEMENT_TIMEOUT_MS").pipe(
        Config.withDefault(30_000),
        Config.validate({ message: "must be 0 or more", validation: (millis) => millis >= 0 })
      ),
      jwtSecret: yield* strongSecret("JWT_SECRET"),
      internalApiKey: yield* strongSecret("INTERNAL_API_KEY"),
      /** Ed25519 private JWK that signs decision receipts; generated under DATA_DIR when unset. */
      receiptSigningKey: yield* optionalRedacted("RECEIPT_SIGNING_KEY"),
      logLevel: yield* logLevelConfig,
      /**
       * Embedded, every write is this process's own and wakes its readers at once: the poll is only a fallback,
       * and at 100 ms an idle all-in-one spent a fifth of a core polling PGlite (README, POLL_INTERVAL_MS).
       */
      pollIntervalMillis: yield* Config.integer("POLL_INTERVAL_MS").pipe(
        Config.withDefault(Option.isNone(databaseUrl) ? 1_000 : 100)
      ),
      /** How long the outbox relay waits after a write wakes it, to publish what follows in the same batch. */
      relayLingerMillis: yield* Config.integer("OUTBOX_RELAY_LINGER_MS").pipe(Config.withDefault(10)),
      /** First retry delay of a consumer batch the infrastructure failed (database, broker); doubles per attempt. */
      consumerRetryBaseMillis: yield* Config.integer("CONSUMER_RETRY_BASE_MS").pipe(Config.withDefault(100)),
      /** Longest delay between retries of such a batch: it is retried for as long as the failure lasts. */
      consumerRetryMaxMillis: yield* Config.integer("CONSUMER_RETRY_MAX_MS").pipe(Config.withDefault(5_000)),
      /**
       * How often a workspace's catalog snapshot is checked against its audit head (in the background) and
       * loaded again if it moved: a bound on how long a change this process did not hear of (its config-change
       * consumer not yet live at start) is missed.
       */
      catalogSnapshotRefreshSeconds: yield* Config.integer("CATALOG_SNAPSHOT_REFRESH_SECONDS").pipe(
        Config.withDefault(60),
        Config.validate({ message: "must be 1 or more", validation: (seconds) => seconds >= 1 })
      ),
      /**
       * How long a batch of gateway usage records is retried while the database is unavailable (a restart, a
       * failover) before it is given up and logged; the calls were answered already, so nothing else waits on it.
       */
      usageRecordRetrySeconds: yield* Config.integer("USAGE_RECORD_RETRY_SECONDS").pipe(
        Config.withDefault(300),
        Config.validate({ message: "must be 0 or more", validation: (seconds) => seconds >= 0 })
      ),
      /** Dedupe records (`processed_events`) older than this are pruned by the retention task (docs/operations.md). */
      processedEventsRetentionHours: yield* positiveInteger("PROCESSED_EVENTS_RETENTION_HOURS", 168),
      /** Database-log rows older than this, and read by every consumer group, are pruned by the retention task. */
      eventLogRetentionHours: yield* positiveInteger("EVENT_LOG_RETENTION_HOURS", 168),
      /** How long a consumer batch waits for more events after its first (fewer, larger transactions). */
      consumerLingerMillis: yield* Config.integer("CONSUMER_LINGER_MS").pipe(Config.withDefault(100)),
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
      /** How long one webhook attempt may take before it counts as failed (below the 60 s delivery lease). */
      webhookAttemptTimeoutMillis: yield* Config.integer("WEBHOOK_ATTEMPT_TIMEOUT_MS").pipe(
        Config.withDefault(10_000),
        Config.validate({ message: "Expected 1 to 50000", validation: (millis) => millis > 0 && millis <= 50_000 })
      ),
      /** Attempts of a budget alert webhook delivery before it is marked failed. */
      webhookMaxAttempts: yield* Config.integer("WEBHOOK_MAX_ATTEMPTS").pipe(Config.withDefault(8)),
      /** Bearer token of `GET /metrics`; unset turns the endpoint off (404). */
      metricsToken: yield* strongSecret("METRICS_TOKEN"),
      /** How often the stream worker's retention task sweeps expired records. */
      retentionIntervalSeconds: yield* positiveInteger("RETENTION_INTERVAL_SECONDS", 3600),
      /** Rows deleted per statement by the retention task (short transactions, no long locks); 0 would loop forever. */
      retentionBatchSize: yield* positiveInteger("RETENTION_BATCH_SIZE", 1000),
      /** On shutdown, how long in-flight requests may take to finish before the server stops anyway. */
      shutdownDrainSeconds: yield* Config.integer("SHUTDOWN_DRAIN_SECONDS").pipe(Config.withDefault(20)),
      /** all-in-one over PostgreSQL: run the stream workers in a worker thread (their own event loop and core). */
      streamWorkerThread: yield* Config.boolean("STREAM_WORKER_THREAD").pipe(Config.withDefault(true)),
      /** Nice value of that thread (0-19): under CPU contention requests are answered first, consumers catch up after. */
      streamWorkerThreadNice: yield* Config.integer("STREAM_WORKER_THREAD_NICE").pipe(
        Config.withDefault(10),
        Config.validate({ message: "Expected 0 to 19", validation: (nice) => nice >= 0 && nice <= 19 })
      ),
      loginFailureLimit: yield* positiveInteger("LOGIN_FAILURE_LIMIT", 10),
      loginFailureWindowSeconds: yield* positiveInteger("LOGIN_FAILURE_WINDOW_SECONDS", 60),
      /** False: `POST /v1/auth/signup` answers 403 (accounts come through the OAuth session exchange only). */
      signupEnabled: yield* Config.boolean("SIGNUP_ENABLED").pipe(Config.withDefault(true)),
      /** Signups per client address within SIGNUP_WINDOW_SECONDS before 429. */
      signupLimit: yield* positiveInteger("SIGNUP_LIMIT", 20),
      signupWindowSeconds: yield* positiveInteger("SIGNUP_WINDOW_SECONDS", 3600),
      /** scrypt cost: N = 2^PASSWORD_SCRYPT_LOG_N (OWASP: 2^17 with r=8, p=1). */
      passwordScryptLogN: yield* Config.integer("PASSWORD_SCRYPT_LOG_N").pipe(
        Config.withDefault(17),
        Config.validate({ message: "Expected 10 to 20", validation: (logN) => logN >= 10 && logN <= 20 })
      ),
      /** Password hashes computed at once; more answer 429 (a hash of cost 2^17 takes most of a core for ~0.7 s). */
      passwordHashConcurrency: yield* positiveInteger("PASSWORD_HASH_CONCURRENCY", availableParallelism()),
      /** Analytics: an event older than this when it is aggregated is counted as late (dimension `late`). */
      analyticsLateGraceSeconds: yield* Config.integer("ANALYTICS_LATE_GRACE_SECONDS").pipe(Config.withDefault(300)),
      /** Policies a workspace may store (409 `policy_limit_reached` past it; docs/policies.md#workspace-limits). */
      maxPoliciesPerWorkspace: yield* positiveInteger("MAX_POLICIES_PER_WORKSPACE", 1_000),
      /** Agent profiles a workspace may store (its decisions' snapshot holds them all); 409 agent_limit_reached. */
      maxAgentsPerWorkspace: yield* positiveInteger("MAX_AGENTS_PER_WORKSPACE", 1_000),
      /** Tools' metadata and label policies a workspace may store (each decision's snapshot holds them all). */
      maxToolMetadataPerWorkspace: yield* positiveInteger("MAX_TOOL_METADATA_PER_WORKSPACE", 1_000),
      maxLabelPoliciesPerWorkspace: yield* positiveInteger("MAX_LABEL_POLICIES_PER_WORKSPACE", 1_000),
      /** Distinct RE2 patterns a workspace's policies may use: a quarter of the process's cache of 512 compiled. */
      maxRegexPatternsPerWorkspace: yield* positiveInteger("MAX_REGEX_PATTERNS_PER_WORKSPACE", 128).pipe(
        Config.validate({
          message: `MAX_REGEX_PATTERNS_PER_WORKSPACE must be at most ${MAX_COMPILED_PATTERNS} (the compiled-pattern cache): past it one workspace would recompile its own patterns on every decision`,
          validation: (count) => count <= MAX_COMPILED_PATTERNS
        })
      ),
      /** Regex compile time a workspace's requests may cause, per second (429 `compile_rate_limited` past 30 s of it). */
      compileMillisPerSecondPerWorkspace: yield* positiveInteger("COMPILE_MS_PER_SECOND_PER_WORKSPACE", 100),
      /** The same for all workspaces together: at most this share of the API thread goes to compiling. */
      compileMillisPerSecond: yield* positiveInteger("COMPILE_MS_PER_SECOND", 300),
      /** Matching time a workspace's heavy decisions may hold the API thread, per second, past a 2 s burst (then they defer; docs/limits.md). */
      decisionMillisPerSecondPerWorkspace: yield* positiveInteger("DECISION_MS_PER_SECOND_PER_WORKSPACE", 250),
      /** The same for all workspaces' heavy decisions together; past it, the workspaces that sent them lately defer. */
      decisionMillisPerSecond: yield* positiveInteger("DECISION_MS_PER_SECOND", 500),
      /** The longest one decision's matching may hold the API thread; past it the decision defers (docs/limits.md). */
      decisionMatchMillis: yield* positiveInteger("DECISION_MATCH_MS", 250),
      /** Budget alert configs a workspace may have (409 `budget_alert_limit_reached` past it; docs/billing.md). */
      maxBudgetAlertsPerWorkspace: yield* positiveInteger("MAX_BUDGET_ALERTS_PER_WORKSPACE", 100),
      /** Models a workspace may price (409 `price_limit_reached` past it; docs/billing.md). */
      maxLlmPricesPerWorkspace: yield* positiveInteger("MAX_LLM_PRICES_PER_WORKSPACE", 1_000),
      /** Provider connections a workspace may have (409 `provider_connection_limit_reached` past it; docs/gateway.md). */
      maxProviderConnectionsPerWorkspace: yield* positiveInteger("MAX_PROVIDER_CONNECTIONS_PER_WORKSPACE", 100),
      /** Gateway routes a workspace may have (409 `gateway_route_limit_reached` past it; docs/gateway.md). */
      maxGatewayRoutesPerWorkspace: yield* positiveInteger("MAX_GATEWAY_ROUTES_PER_WORKSPACE", 1_000),
      /** Saved analytics views a workspace may have (409 `analytics_view_limit_reached` past it; docs/analytics.md). */
      maxAnalyticsViewsPerWorkspace: yield* positiveInteger("MAX_ANALYTICS_VIEWS_PER_WORKSPACE", 100),
      /**
       * Workspaces a user may own, the signup's included (409 `workspace_limit_reached` past it; docs/limits.md):
       * each is a tenant of its own with fresh per-workspace caps and fair shares.
       */
      maxWorkspacesPerUser: yield* positiveInteger("MAX_WORKSPACES_PER_USER", 100),
      /**
       * How long a team invite may be accepted after it was sent (7 days, as GitHub's and Slack's). Measured from
       * each invite's `created_at`, so a changed value applies to invites already sent (docs/authentication.md).
       */
      inviteTtlHours: yield* positiveInteger("INVITE_TTL_HOURS", 168).pipe(
        Config.validate({
          message: "INVITE_TTL_HOURS must be at most 876000 (a hundred years)",
          validation: (hours) => hours <= 876_000
        })
      ),
      /**
       * Pending (unexpired) invites a workspace may have (409 `invite_limit_reached` past it; docs/limits.md):
       * every one is in each `GET /v1/team/members` answer.
       */
      maxPendingInvitesPerWorkspace: yield* positiveInteger("MAX_PENDING_INVITES_PER_WORKSPACE", 100),
      /** Environments a workspace may have (409 `environment_limit_reached` past it; docs/limits.md). */
      maxEnvironmentsPerWorkspace: yield* positiveInteger("MAX_ENVIRONMENTS_PER_WORKSPACE", 100),
      /**
       * How long a budget lease no call draws from is kept before what it still holds goes back to the ledger
       * (docs/billing.md); longer keeps sparse strict calls off the ledger row, shorter frees the budget sooner.
       */
      budgetLeaseIdleMillis: yield* positiveInteger("BUDGET_LEASE_IDLE_MS", 1_000),
      /** Knowledge sources a workspace may store (409 `knowledge_limit_reached` past it; docs/catalog.md). */
      maxKnowledgeSourcesPerWorkspace: yield* positiveInteger("MAX_KNOWLEDGE_SOURCES_PER_WORKSPACE", 1_000),
      /** Bytes of knowledge files a workspace may store, all sources together (409 `knowledge_limit_reached`). */
      maxKnowledgeBytesPerWorkspace: yield* positiveInteger("MAX_KNOWLEDGE_BYTES_PER_WORKSPACE", 256 * 1024 * 1024),
      /** Red-team jobs a workspace may have queued or running (429 `too_many_jobs` past it; docs/redteam.md#queue-fairness). */
      maxRedteamJobsPerWorkspace: yield* positiveInteger("MAX_REDTEAM_JOBS_PER_WORKSPACE", 20),
      /**
       * How long `POST /v1/redteam/jobs/{id}/harden` may spend replaying against the target; replays without an
       * answer by then reject their candidates with `no_target_reply` (docs/redteam.md#hardening).
       */
      redteamHardenReplaySeconds: yield* positiveInteger("REDTEAM_HARDEN_REPLAY_SECONDS", 120),
      /**
       * Bytes of target answers one hardening keeps for verifying its candidates (all are held until then); past
       * it no further replay is made and the candidates left unverified fail with `no_target_reply`.
       */
      redteamHardenReplayBytes: yield* positiveInteger("REDTEAM_HARDEN_REPLAY_BYTES", 64 * 1024 * 1024),
      /** Impact replays a workspace may have queued or running (429 `too_many_jobs` past it). */
      maxImpactJobsPerWorkspace: yield* positiveInteger("MAX_IMPACT_JOBS_PER_WORKSPACE", 20),
      /**
       * A running impact replay whose worker has not reported for this long is queued again (replayed from the
       * start); a worker reports every sixth of it while it replays.
       */
      impactStaleAfterSeconds: yield* positiveInteger("IMPACT_STALE_AFTER_SECONDS", 30),
      /** Fingerprints kept per run or session for provenance inference (docs/authorization.md); more are not recorded. */
      provenanceMaxPerScope: yield* positiveInteger("PROVENANCE_MAX_PER_SCOPE", 2_000),
      /** Key material of provider API keys at rest (AES-256-GCM); generated under DATA_DIR when unset. */
      gatewayEncryptionKey: yield* strongSecret("GATEWAY_ENCRYPTION_KEY"),
      /** How long the gateway waits for an upstream's response headers, or between body chunks (504 before headers). */
      gatewayUpstreamTimeoutMillis: yield* Config.integer("GATEWAY_UPSTREAM_TIMEOUT_MS").pipe(
        Config.withDefault(300_000)
      ),
      /** Proxied calls in flight at once per workspace, in this process (429 `too_many_streams` above). */
      gatewayMaxStreamsPerWorkspace: yield* positiveInteger("GATEWAY_MAX_STREAMS_PER_WORKSPACE", 500),
      /** Proxied calls in flight at once per API key (or user session), in this process. */
      gatewayMaxStreamsPerKey: yield* positiveInteger("GATEWAY_MAX_STREAMS_PER_KEY", 250),
      /** Longest a proxied response may stream, from the provider's response head; then it is ended with an error event. */
      gatewayMaxStreamSeconds: yield* positiveInteger("GATEWAY_MAX_STREAM_SECONDS", 900),
      /** Longest SSE line the usage meter holds while waiting for its newline; a longer one ends the stream. */
      gatewaySseMaxLineBytes: yield* positiveInteger("GATEWAY_SSE_MAX_LINE_BYTES", 1024 * 1024),
      /** Prompt tokens a strict call's worst case counts for each image, file or document it names by URL or file id. */
      gatewayReferencedPartTokens: yield* positiveInteger("GATEWAY_REFERENCED_PART_TOKENS", 100_000),
      /** Streamed reply text is decided in windows of about this many characters (or up to a sentence end). */
      gatewayGuardrailWindowChars: yield* positiveInteger("GATEWAY_GUARDRAIL_WINDOW_CHARS", 200),
      /** The end of a streamed reply held back from each window, so a pattern split across chunks is seen whole. */
      gatewayGuardrailHoldChars: yield* positiveInteger("GATEWAY_GUARDRAIL_HOLD_CHARS", 64),
      /**
       * An idempotency key in flight whose holder has not renewed it for this long was abandoned (its process
       * died): a repeat may take it over. A holder renews it every tenth of this while it runs.
       */
      idempotencyAbandonedAfterMillis: yield* positiveInteger("IDEMPOTENCY_ABANDONED_AFTER_MS", 120_000),
      /** How long a client may take to send a whole request (headers and body); not the response. */
      httpRequestTimeoutMillis: yield* positiveInteger("HTTP_REQUEST_TIMEOUT_MS", 30_000),
      /** How long a client may take to send a request's headers (slow-header clients are cut off). */
      httpHeadersTimeoutMillis: yield* positiveInteger("HTTP_HEADERS_TIMEOUT_MS", 10_000),
      /** An OTLP/HTTP collector (spans go to `<endpoint>/v1/traces` as JSON); unset, spans are not exported. */
      otlpEndpoint: yield* Config.option(Config.url("OTEL_EXPORTER_OTLP_ENDPOINT")),
      /** How long one span export to the collector may take (OpenTelemetry's variable, milliseconds). */
      otlpTimeoutMillis: yield* positiveInteger("OTEL_EXPORTER_OTLP_TIMEOUT", 10_000),
      otelServiceName: yield* Config.string("OTEL_SERVICE_NAME").pipe(Config.withDefault("guardrail-service"))
    }
  })
}) {}

export type AppSettings = AppConfig

export const isEmbeddedDatabase = (config: AppConfig) => Option.isNone(config.databaseUrl)
export const isKafkaEnabled = (config: AppConfig) => config.kafkaBrokers.length > 0
export const revealOption = (value: Option.Option<Redacted.Redacted<string>>) => Option.map(value, Redacted.value)
