/** The whole service over a fresh database that it reaches through a loopback TCP proxy the test controls. */
import { Context, Effect, Layer } from "effect"
import { inject } from "vitest"
import { type TcpProxy, tcpProxy } from "./TcpProxy.js"
import { freshDatabase } from "./TestPlatform.js"
import { TestDatabaseUrl, testServerWithRelayOver } from "./TestServer.js"

export class DatabaseProxy extends Context.Tag("test/DatabaseProxy")<DatabaseProxy, TcpProxy>() {}

/** Also provides `TestDatabaseUrl` (the database itself, not through the proxy) and `DatabaseProxy`. */
export const serverBehindDatabaseProxy = (extra: Record<string, string> = {}) =>
  Layer.unwrapScoped(
    Effect.gen(function* () {
      const postgres = new URL(inject("postgresAdminUrl"))
      const url = yield* freshDatabase
      const proxy = yield* tcpProxy({ host: postgres.hostname, port: Number(postgres.port || 5432) })
      return Layer.mergeAll(
        testServerWithRelayOver("database", proxy.through(url), extra),
        Layer.succeed(TestDatabaseUrl, url),
        Layer.succeed(DatabaseProxy, proxy)
      )
    })
  )
