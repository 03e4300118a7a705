/**
 * Runs the numbered SQL files in `migrations/` (`0001_name.sql`) through the
 * @effect/sql migrator at start-up. The migrator itself only loads modules, so
 * this loader turns each file into a migration effect.
 */
import { Migrator, SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import { readdirSync, readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"

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
        Effect.succeed(Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(text)))
      ]
    })
    .sort(([a], [b]) => a - b)
)

const runMigrations = Migrator.make({})({ loader: sqlFileLoader })

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
