/**
 * An interrupted query (a client hung up, a fiber shut down) must not cancel
 * somebody else's. @effect/sql-pg cancels an interrupted query by backend
 * pid over another connection; if the query ends first, its connection is
 * reused and the cancel lands on the next user's query (src/platform/Database.ts).
 */
import { expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Deferred, Effect, Fiber, Layer } from "effect"
import { AppConfig } from "../../src/platform/Config.js"
import { SqlLive } from "../../src/platform/Database.js"
import { queryDatabase } from "../support/Database.js"
import { until } from "../support/Eventually.js"
import { configLayer, freshDatabase, settingsFor } from "../support/TestPlatform.js"
import { TestDatabaseUrl } from "../support/TestServer.js"

const sqlOverFreshDatabase = Layer.unwrapScoped(
  Effect.map(freshDatabase, (url) =>
    SqlLive.pipe(
      Layer.provide(AppConfig.Default),
      Layer.provide(configLayer(settingsFor("database", url, { DATABASE_POOL_SIZE: "2" }))),
      Layer.merge(Layer.succeed(TestDatabaseUrl, url))
    )
  )
)

layer(sqlOverFreshDatabase, { timeout: "60 seconds", excludeTestServices: true })("interrupted queries", (it) => {
  it.effect("interrupting a running query leaves the next query on its connection whole", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const databaseUrl = yield* TestDatabaseUrl
      // Read over a connection of its own, outside the pool under test.
      const sleeping = queryDatabase<{ running: number }>(
        databaseUrl,
        `select count(*)::int as running from pg_stat_activity
         where datname = current_database() and state = 'active' and query like 'select pg_sleep%'`
      )
      // Both connections busy: one long query, and the one to interrupt (long enough to be seen running).
      const holder = yield* Effect.fork(sql`select pg_sleep(3)`)
      const interrupted = yield* Effect.fork(sql`select pg_sleep(1.5)`)
      yield* until(
        Effect.filterOrFail(
          sleeping,
          (rows) => rows[0]?.running === 2,
          () => "not running yet"
        )
      )
      // The next caller waits for a connection before the interruption happens.
      const queued = yield* Deferred.make<void>()
      const next = yield* Effect.fork(
        Deferred.succeed(queued, undefined).pipe(
          Effect.zipRight(sql<{ readonly answer: string }>`select pg_sleep(3), 'whole' as answer`)
        )
      )
      yield* Deferred.await(queued)
      yield* Fiber.interrupt(interrupted)

      const rows = yield* Fiber.join(next)
      expect(rows[0]?.answer).toBe("whole")
      yield* Fiber.join(holder)
    })
  )
})
