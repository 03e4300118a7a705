/**
 * Dead letters for operators: events a consumer group could not decode.
 *
 *   npm run dead-letters -- list [--group G] [--all]
 *   npm run dead-letters -- replay [--group G] [--id N]...
 *
 * `list` prints one JSON line per dead letter (id, group, topic, partition,
 * offset, event_id, key, reason, created_at, replayed_at); by default only the
 * ones not replayed yet, with `--all` every one.
 *
 * `replay` puts each chosen dead letter (not replayed yet) back into the
 * transactional outbox, with its original topic, key, value and event id and
 * the header `dead-letter-group: <group>`, and marks it replayed, in one
 * transaction. The running service's relay publishes it; only the group that
 * dead-lettered it applies it (the others pass over it), once: its dedupe
 * (processed_events) skips a second replay, and a replay that still cannot be
 * decoded is dead-lettered again. Prints `{"replayed": n}`.
 *
 * Settings come from the environment like the service's: DATABASE_URL (the
 * service's PostgreSQL). The embedded database serves only the service's own
 * connection, so with it stop the service first or use PostgreSQL.
 */
import { NodeRuntime } from "@effect/platform-node"
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Console, Effect, Logger, Option, Schema } from "effect"
import { AppConfig } from "../src/platform/Config.js"
import { REPLAY_HEADER } from "../src/platform/Consumer.js"
import { RELAY_GROUP } from "../src/platform/Outbox.js"

const USAGE = `usage: npm run dead-letters -- list [--group G] [--all]
       npm run dead-letters -- replay [--group G] [--id N]...`

class UsageError extends Schema.TaggedError<UsageError>()("UsageError", { message: Schema.String }) {}

interface Options {
  readonly command: "list" | "replay"
  readonly group: string | undefined
  readonly ids: ReadonlyArray<string>
  readonly all: boolean
}

const parseArguments = (args: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const [command, ...rest] = args
    if (command !== "list" && command !== "replay") return yield* new UsageError({ message: "name a command" })
    let group: string | undefined
    const ids: Array<string> = []
    let all = false
    for (let i = 0; i < rest.length; i++) {
      const arg = rest[i]!
      const value = () => {
        const next = rest[++i]
        return next === undefined || next === "" ? undefined : next
      }
      if (arg === "--group") group = value()
      else if (arg === "--id") {
        const id = value()
        if (id === undefined || !/^\d+$/.test(id)) return yield* new UsageError({ message: "--id needs a number" })
        ids.push(id)
      } else if (arg === "--all" && command === "list") all = true
      else return yield* new UsageError({ message: `unexpected argument ${arg}` })
    }
    return { command, group, ids, all } satisfies Options
  })

interface DeadLetterRow {
  readonly id: string
  readonly group_id: string
  readonly topic: string
  readonly partition: number | null
  readonly offset: string | null
  readonly event_id: string
  readonly key: string
  readonly value: string
  readonly headers: string | Record<string, string>
  readonly error: string
  readonly created_at: Date
  readonly replayed_at: Date | null
}

const chosen = (options: Options, includeReplayed: boolean) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql<DeadLetterRow>`
      select id::text as id, group_id, topic, partition, "offset", event_id::text as event_id, key, value, headers,
             error, created_at, replayed_at
      from dead_letters
      where ${options.group === undefined ? sql`true` : sql`group_id = ${options.group}`}
        and ${options.ids.length === 0 ? sql`true` : sql`id in ${sql.in(options.ids.map(Number))}`}
        and ${includeReplayed ? sql`true` : sql`replayed_at is null`}
      order by id
      ${includeReplayed ? sql`` : sql`for update`}`
  )

const list = (options: Options) =>
  Effect.flatMap(chosen(options, options.all), (rows) =>
    Effect.forEach(
      rows,
      (row) =>
        Console.log(
          JSON.stringify({
            id: Number(row.id),
            group: row.group_id,
            topic: row.topic,
            partition: row.partition,
            offset: row.offset,
            event_id: row.event_id,
            key: row.key,
            reason: row.error,
            created_at: new Date(row.created_at).toISOString(),
            replayed_at: row.replayed_at === null ? null : new Date(row.replayed_at).toISOString()
          })
        ),
      { discard: true }
    )
  )

const headersOf = (row: DeadLetterRow) =>
  typeof row.headers === "string" ? (JSON.parse(row.headers) as Record<string, string>) : row.headers

const replay = (options: Options) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const replayed = yield* sql.withTransaction(
      Effect.gen(function* () {
        const rows = yield* chosen(options, false)
        if (rows.length === 0) return 0
        // The outbox row of the original event is long gone; if it is somehow still there, it is on its way anyway.
        yield* sql`insert into outbox ${sql.insert(
          rows.map((row) => ({
            event_id: row.event_id,
            topic: row.topic,
            key: row.key,
            value: row.value,
            // An event the relay could not publish was seen by no group: it goes to all of them.
            headers: JSON.stringify(
              row.group_id === RELAY_GROUP ? headersOf(row) : { ...headersOf(row), [REPLAY_HEADER]: row.group_id }
            )
          }))
        )} on conflict (event_id) do nothing`
        yield* sql`update dead_letters set replayed_at = now() where id in ${sql.in(rows.map((row) => row.id))}`
        return rows.length
      })
    )
    yield* Console.log(JSON.stringify({ replayed }))
  })

const program = Effect.gen(function* () {
  const config = yield* AppConfig
  const options = yield* parseArguments(process.argv.slice(2))
  const url = yield* Option.match(config.databaseUrl, {
    onSome: Effect.succeed,
    onNone: () =>
      new UsageError({
        message: "set DATABASE_URL to the service's PostgreSQL (the embedded database serves only the service)"
      })
  })
  const database = PgClient.layer({
    url,
    maxConnections: 1,
    applicationName: "guardrail-dead-letters",
    transformJson: false
  })
  return yield* (options.command === "list" ? list(options) : replay(options)).pipe(Effect.provide(database))
})

program.pipe(
  Effect.catchTags({
    UsageError: (error) =>
      Console.error(`${error.message}\n${USAGE}`).pipe(Effect.zipRight(Effect.sync(() => (process.exitCode = 2))))
  }),
  Effect.provide(AppConfig.Default),
  Effect.provide(Logger.replace(Logger.defaultLogger, Logger.withConsoleError(Logger.logfmtLogger))),
  NodeRuntime.runMain({ disablePrettyLogger: true })
)
