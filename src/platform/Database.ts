/**
 * The SQL client layer: PostgreSQL at DATABASE_URL, or, when it is unset, an
 * embedded PGlite persisted under DATA_DIR and served over the pg wire
 * protocol on loopback, so both paths use one driver and one dialect.
 */
import { SqlError } from "@effect/sql/SqlError"
import { PgClient } from "@effect/sql-pg"
import { Duration, Effect, Layer, Option, Redacted } from "effect"
import { chmodSync, mkdirSync, readdirSync } from "node:fs"
import { join, resolve } from "node:path"
import { Socket } from "node:net"
import Pg from "pg"
import { AppConfig } from "./Config.js"

// A connect that hangs (packets dropped, not refused) fails after this, so
// retries and shutdown are not held up to the OS TCP timeout.
const CONNECT_TIMEOUT = Duration.seconds(10)

/**
 * A pg client whose backend process id stays unknown to @effect/sql-pg. On
 * interruption, sql-pg cancels a running query with
 * `pg_cancel_backend(pid)` sent over another connection; when the query ends
 * before that arrives, the connection has gone back to the pool and the
 * cancel kills whatever query its next user runs (seen as "canceling
 * statement due to user request" in an unrelated request or shutdown
 * flush). Without a pid, an interrupted query runs to its end on its
 * connection and the next query on it waits behind it; the interrupted
 * fiber still returns at once.
 */
class UncancelledClient extends Pg.Client {
  get processID(): undefined {
    return undefined
  }
  // pg assigns it from the server's BackendKeyData; nothing else of ours reads it.
  set processID(_pid: number | null) {}
}

/** How long past the statement timeout a connection may stay silent before it is taken for dead. */
const SILENCE_GRACE = Duration.seconds(5)

/**
 * An UncancelledClient whose socket is destroyed after `silenceMillis` without a byte either way. A
 * healthy server ends every statement by `statement_timeout`; a connection silent for longer is
 * half-open (the server gone without a reset: a failover, a dropped route), and a query on it would
 * otherwise wait for the OS to give up on TCP, a quarter of an hour. Destroyed, its query fails (503)
 * and the pool drops it. An idle pooled connection is closed by the pool first (10 s).
 */
const silenceLimitedClient = (silenceMillis: number) =>
  class extends UncancelledClient {
    constructor(config?: string | Pg.ClientConfig) {
      super(config)
      const stream = this.connection.stream
      if (stream instanceof Socket) {
        stream.setTimeout(silenceMillis, () =>
          stream.destroy(new Error(`the database sent nothing for ${silenceMillis} ms (connection taken for dead)`))
        )
      }
    }
  }

/**
 * A PgClient over a pool of `UncancelledClient`s, otherwise as `PgClient.layer` builds it.
 * `statementTimeoutMillis` (0: none) is every connection's `statement_timeout`: since an
 * interrupted query is not cancelled (above), the server ends one that hangs, e.g. behind
 * a lock, and its caller gets an error to answer instead of waiting for ever.
 */
const pgLayer = (url: Redacted.Redacted, maxConnections: number, statementTimeoutMillis: number) =>
  PgClient.layerFromPool({
    applicationName: "guardrail-service",
    transformJson: false,
    acquire: Effect.acquireRelease(
      Effect.tryPromise({
        try: async () => {
          const pool = new Pg.Pool({
            connectionString: Redacted.value(url),
            connectionTimeoutMillis: Duration.toMillis(CONNECT_TIMEOUT),
            max: maxConnections,
            application_name: "guardrail-service",
            ...(statementTimeoutMillis > 0 ? { statement_timeout: statementTimeoutMillis } : {}),
            Client:
              statementTimeoutMillis > 0
                ? silenceLimitedClient(statementTimeoutMillis + Duration.toMillis(SILENCE_GRACE))
                : UncancelledClient
          })
          pool.on("error", () => {}) // an idle connection's error; the pool replaces it
          await pool.query("select 1")
          return pool
        },
        catch: (cause) => new SqlError({ cause, message: "PgClient: Failed to connect" })
      }).pipe(
        Effect.timeoutFail({
          duration: CONNECT_TIMEOUT,
          onTimeout: () =>
            new SqlError({ cause: new Error("Connection timed out"), message: "PgClient: Connection timed out" })
        })
      ),
      // As sql-pg does: a pool that will not end does not hold shutdown up.
      (pool) => Effect.promise(() => pool.end()).pipe(Effect.interruptible, Effect.timeoutOption(Duration.seconds(1)))
    )
  })

/**
 * Owner-only modes for everything under `directory` (folders 0700, files
 * 0600). PGlite unpacks its initial cluster with mode 0666 whatever the
 * umask; the files PostgreSQL creates later are 0600 already.
 */
const restrictToOwner = (directory: string) => {
  chmodSync(directory, 0o700)
  for (const entry of readdirSync(directory, { withFileTypes: true })) {
    const path = join(directory, entry.name)
    if (entry.isDirectory()) restrictToOwner(path)
    else if (entry.isFile()) chmodSync(path, 0o600)
  }
}

/** Starts PGlite and its socket server for the life of the scope; answers the connection URL. */
const embeddedPostgres = (dataDir: string, port: number) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const [{ PGlite }, { PGLiteSocketServer }] = await Promise.all([
        import("@electric-sql/pglite"),
        import("@electric-sql/pglite-socket")
      ])
      const directory = resolve(dataDir, "pglite")
      mkdirSync(directory, { recursive: true, mode: 0o700 })
      const db = await PGlite.create(directory)
      restrictToOwner(directory)
      const server = new PGLiteSocketServer({ db, host: "127.0.0.1", port })
      await server.start()
      return { db, server, directory, url: `postgres://postgres@${server.getServerConn()}/postgres` }
    }),
    ({ db, directory, server }) =>
      Effect.promise(() => server.stop().then(() => db.close())).pipe(
        // Files rewritten while running (e.g. the relation cache) are restricted again.
        Effect.zipRight(Effect.sync(() => restrictToOwner(directory)))
      )
  ).pipe(Effect.map(({ url }) => url))

export const SqlLive = Layer.unwrapScoped(
  Effect.gen(function* () {
    const config = yield* AppConfig
    if (Option.isSome(config.databaseUrl)) {
      return pgLayer(config.databaseUrl.value, config.databasePoolSize, config.databaseStatementTimeoutMillis)
    }
    const url = yield* embeddedPostgres(config.dataDir, config.embeddedDatabasePort)
    yield* Effect.logInfo("embedded database started").pipe(
      Effect.annotateLogs({ data_dir: join(config.dataDir, "pglite") })
    )
    // PGlite is single-connection: one pooled connection keeps transactions whole.
    // PGlite runs one statement at a time in this process and has no timer to end one early.
    return pgLayer(Redacted.make(url), 1, 0)
  })
)
