/**
 * Runs the numbered SQL files in `migrations/` (`0001_name.sql`) through the
 * @effect/sql migrator at start-up. The migrator itself only loads modules, so
 * this loader turns each file into a migration effect.
 */
import { Migrator, SqlClient } from "@effect/sql"
import { Duration, Effect, Layer, Schedule } from "effect"
import { readdirSync, readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { AppConfig, isEmbeddedDatabase } from "./Config.js"

export const migrationsDirectory = fileURLToPath(new URL("../../migrations/", import.meta.url))

const sqlFileLoader: Migrator.Loader = Effect.sync(() =>
  readdirSync(migrationsDirectory)
    .map((file) => file.match(/^(\d+)_(.+)\.sql$/))
    .filter((match): match is RegExpMatchArray => match !== null)
    .map((match): Migrator.ResolvedMigration => {
      const text = readFileSync(`${migrationsDirectory}${match[0]}`, "utf8")
      return [
        Number(match[1]),
        match[2]!,
        // A migration may rewrite a large table: no statement timeout (DATABASE_STATEMENT_TIMEOUT_MS) for
        // the rest of the migrator's transaction.
        Effect.succeed(
          Effect.flatMap(SqlClient.SqlClient, (sql) =>
            Effect.zipRight(sql.unsafe("set local statement_timeout = 0"), sql.unsafe(text))
          )
        )
      ]
    })
    .sort(([a], [b]) => a - b)
)

const migrate = Migrator.make({})({ loader: sqlFileLoader })

// Processes starting together on a fresh database (api beside stream-worker) would race on the
// migrator's own CREATE TABLE (it cannot run inside one transaction: it probes the table with a
// query that may fail), so a session advisory lock on a reserved connection makes them take turns.
// The embedded database serves one process, so it needs none.
const MIGRATION_LOCK = 7_310_001
const runMigrations = Effect.gen(function* () {
  if (isEmbeddedDatabase(yield* AppConfig)) return yield* migrate
  const sql = yield* SqlClient.SqlClient
  const connection = yield* sql.reserve
  // Tried once a second for as long as another process migrates: a blocking pg_advisory_lock would keep
  // the connection silent, and a pooled connection silent past the statement timeout is taken for dead.
  const tryLock = connection
    .executeValues(`select pg_try_advisory_lock(${MIGRATION_LOCK})`, [])
    .pipe(Effect.flatMap((rows) => (rows[0]?.[0] === true ? Effect.void : Effect.fail("held" as const))))
  return yield* Effect.acquireUseRelease(
    tryLock.pipe(Effect.retry({ while: (held) => held === "held", schedule: Schedule.spaced(Duration.seconds(1)) })),
    () => migrate,
    () => connection.executeValues(`select pg_advisory_unlock(${MIGRATION_LOCK})`, []).pipe(Effect.ignore)
  )
}).pipe(Effect.scoped)

export const MigrationsLive = Layer.effectDiscard(
  runMigrations.pipe(
    Effect.tap((applied) =>
      applied.length === 0
        ? Effect.void
        : Effect.logInfo("migrations applied").pipe(
            Effect.annotateLogs({ migrations: applied.map(([id, name]) => `${id}_${name}`) })
          )
    )
  )
)
