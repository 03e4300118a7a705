/**
 * The change-notice listener outlives a database blip: once its connection is
 * cut (here through a loopback TCP proxy), it listens again on a new one, so
 * a key another instance revokes afterwards is refused within seconds, not
 * served from the cache until its one-minute refresh. Before, the listening
 * connection died silently and no notice was heard again until a restart.
 */
import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import pg from "pg"
import { inject } from "vitest"
import { until } from "../support/Eventually.js"
import { call } from "../support/Raw.js"
import { type TcpProxy, tcpProxy } from "../support/TcpProxy.js"
import { createKey, tenant } from "../support/Tenants.js"
import { freshDatabase } from "../support/TestPlatform.js"
import { baseUrl, SERVER_OPTIONS, TestDatabaseUrl, testServerOver } from "../support/TestServer.js"

const postgres = new URL(inject("postgresAdminUrl"))

class DatabaseProxy extends Context.Tag("test/DatabaseProxy")<DatabaseProxy, TcpProxy>() {}

const serverBehindProxy = Layer.unwrapScoped(
  Effect.gen(function* () {
    const url = yield* freshDatabase
    const proxy = yield* tcpProxy({ host: postgres.hostname, port: Number(postgres.port || 5432) })
    return Layer.mergeAll(
      testServerOver("database", proxy.through(url)),
      Layer.succeed(DatabaseProxy, proxy),
      Layer.succeed(TestDatabaseUrl, url)
    )
  })
)

/** Runs `statements` on a connection of the test's own, straight to PostgreSQL (another instance's writes). */
const direct = (url: string, statements: ReadonlyArray<readonly [string, ReadonlyArray<unknown>]>) =>
  Effect.promise(async () => {
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    try {
      const results = []
      for (const [text, values] of statements) results.push(await client.query(text, [...values]))
      return results
    } finally {
      await client.end()
    }
  })

/** Sessions of this database whose last statement was a LISTEN (the service's listening connection). */
const listeningSessions = (url: string) =>
  Effect.map(
    direct(url, [
      [
        `select count(*)::int as count from pg_stat_activity
         where datname = current_database() and query ilike 'LISTEN%' and pid <> pg_backend_pid()`,
        []
      ]
    ]),
    ([result]) => (result!.rows[0] as { count: number }).count
  )

layer(serverBehindProxy, SERVER_OPTIONS)("change notices after a database blip", (it) => {
  it.effect("a key revoked by another instance after the blip is refused within seconds", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const proxy = yield* DatabaseProxy
      const url = yield* TestDatabaseUrl
      const owner = yield* tenant(base)
      const created = yield* createKey(owner)
      const useKey = Effect.map(
        call(base, "GET", "/v1/environments", { token: created.plaintext_key }),
        (answer) => answer.status
      )
      expect(yield* useKey).toBe(200)
      yield* until(Effect.map(listeningSessions(url), (count) => expect(count).toBe(1)))

      // A network blip: every open connection to the database is cut, the listening one too.
      yield* proxy.dropConnections
      yield* until(
        Effect.map(listeningSessions(url), (count) => expect(count).toBe(1)),
        "15 seconds"
      )
      // Served again (the key from the cache); it stays cached, so a missed notice would keep it working.
      yield* until(Effect.map(useKey, (status) => expect(status).toBe(200)))

      // Another instance revokes the key and sends the notice, as `ApiKeys.revoke` does.
      yield* direct(url, [
        ["update api_keys set status = 'revoked', revoked_at = now() where id = $1", [created.api_key.id]],
        ["select pg_notify('guardrail_changes', 'api_keys:*')", []]
      ])
      // Well inside the cache's one-minute refresh: only the notice can explain the refusal.
      yield* until(
        Effect.map(useKey, (status) => expect(status).toBe(401)),
        "10 seconds"
      )
    })
  )
})
