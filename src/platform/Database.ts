/**
 * The SQL client layer: PostgreSQL at DATABASE_URL, or, when it is unset, an
 * embedded PGlite persisted under DATA_DIR and served over the pg wire
 * protocol on loopback, so both paths use one driver and one dialect.
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Option, Redacted } from "effect"
import { chmodSync, mkdirSync, readdirSync } from "node:fs"
import { join, resolve } from "node:path"
import { AppConfig } from "./Config.js"

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
    // A connect that hangs (packets dropped, not refused) fails after this, so
    // retries and shutdown are not held up to the OS TCP timeout.
    const pgOptions = { applicationName: "guardrail-service", transformJson: false, connectTimeout: "10 seconds" } as const
    if (Option.isSome(config.databaseUrl)) {
      return PgClient.layer({ ...pgOptions, url: config.databaseUrl.value, maxConnections: config.databasePoolSize })
    }
    const url = yield* embeddedPostgres(config.dataDir, config.embeddedDatabasePort)
    yield* Effect.logInfo("embedded database started").pipe(
      Effect.annotateLogs({ data_dir: join(config.dataDir, "pglite") })
    )
    // PGlite is single-connection: one pooled connection keeps transactions whole.
    return PgClient.layer({ ...pgOptions, url: Redacted.make(url), maxConnections: 1 })
  })
)
