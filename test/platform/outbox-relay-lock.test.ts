/**
 * Two outbox relays over one database (the database event log, so every
 * publish is a row we can count). Relay A reaches PostgreSQL through a
 * loopback TCP proxy and holds the relay lock; relay B waits for it. The
 * proxy then cuts A's lock connection alone: PostgreSQL releases the lock
 * with the session. A must notice that its lock is gone and stop (and compete
 * for it again), so events written afterwards are published once each. Then
 * A loses the database altogether and B takes over: none is lost.
 */
import { describe, expect, it } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer } from "effect"
import { inject } from "vitest"
import { Outbox } from "../../src/platform/Outbox.js"
import { PlatformLive } from "../../src/platform/Platform.js"
import { Topics } from "../../src/platform/Topics.js"
import { queryDatabase } from "../support/Database.js"
import { eventually } from "../support/Eventually.js"
import { tcpProxy } from "../support/TcpProxy.js"
import { configLayer, freshDatabase, settingsFor } from "../support/TestPlatform.js"

const postgres = new URL(inject("postgresAdminUrl"))
const RELAY_LOCK = 7_211_002

/** The client port of the session holding the relay lock, if one does. */
const lockHolderPort = (url: string) =>
  Effect.map(
    queryDatabase<{ client_port: number }>(
      url,
      `select a.client_port from pg_locks l join pg_stat_activity a on a.pid = l.pid
       where l.locktype = 'advisory' and l.objid = ${RELAY_LOCK} and l.granted
         and l.database = (select oid from pg_database where datname = current_database())`
    ),
    (rows) => rows[0]?.client_port
  )

describe("outbox relay lock", () => {
  it.live(
    "a relay whose lock connection dies stops; the other takes over: each event published once, none lost",
    () =>
      Effect.gen(function* () {
        const url = yield* freshDatabase
        const proxy = yield* tcpProxy({ host: postgres.hostname, port: Number(postgres.port || 5432) })
        const platform = (databaseUrl: string) =>
          Layer.build(PlatformLive.pipe(Layer.provide(configLayer(settingsFor("database", databaseUrl)))))

        yield* platform(proxy.through(url))
        const heldByA = yield* eventually(
          Effect.flatMap(Effect.zip(lockHolderPort(url), proxy.upstreamPorts), ([port, proxied]) =>
            port !== undefined && proxied.includes(port) ? Effect.succeed(port) : Effect.fail("relay A has no lock yet")
          )
        )
        const b = yield* platform(url)
        const sql = Context.get(b, SqlClient.SqlClient)
        const outbox = Context.get(b, Outbox)
        const enqueue = (from: number, count: number) =>
          Effect.forEach(
            Array.from({ length: count / 10 }, (_, round) => round),
            (round) =>
              sql.withTransaction(
                outbox.enqueue(
                  Array.from({ length: 10 }, (_, i) => ({
                    topic: Topics.runEvents,
                    key: `key-${i % 4}`,
                    value: { schema_version: 1, n: from + round * 10 + i }
                  }))
                )
              ),
            { discard: true }
          )
        const published = Effect.map(
          queryDatabase<{ n: string; distinct: string }>(
            url,
            "select count(*)::text as n, count(distinct event_id)::text as distinct from event_log"
          ),
          ([row]) => ({ rows: Number(row!.n), distinct: Number(row!.distinct) })
        )
        const untilPublished = (total: number) =>
          eventually(
            Effect.flatMap(Effect.zip(published, outbox.backlog), ([seen, backlog]) =>
              seen.rows >= total && backlog === 0 ? Effect.succeed(seen) : Effect.fail(seen)
            ),
            "60 seconds"
          )

        yield* enqueue(0, 50)
        yield* untilPublished(50)

        // A's lock connection dies (its other connections live on): PostgreSQL releases the lock with the session.
        expect(yield* proxy.dropConnectionFrom(heldByA)).toBe(true)
        yield* eventually(
          Effect.flatMap(lockHolderPort(url), (port) =>
            port !== undefined && port !== heldByA ? Effect.void : Effect.fail("nobody holds the lock again yet")
          )
        )
        // Whoever holds it now (B, or A on a new connection) publishes alone: a relay never publishes without it.
        yield* enqueue(50, 150)
        yield* untilPublished(200)
        yield* Effect.sleep("1 second")
        expect(yield* published).toEqual({ rows: 200, distinct: 200 })

        // A loses the database altogether: B takes over and delivers the rest.
        yield* proxy.pause
        yield* eventually(
          Effect.flatMap(Effect.zip(lockHolderPort(url), proxy.upstreamPorts), ([port, proxied]) =>
            port !== undefined && !proxied.includes(port) ? Effect.void : Effect.fail("relay B has no lock yet")
          )
        )
        yield* enqueue(200, 150)
        yield* untilPublished(350)
        yield* Effect.sleep("1 second")
        expect(yield* published).toEqual({ rows: 350, distinct: 350 })
      }).pipe(Effect.scoped),
    120_000
  )
})
