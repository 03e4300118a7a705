/**
 * `last_used_at` survives a database blip: a key used while the database was
 * out of reach (answered from the key cache) shows that use once the
 * database is back. The instance that records the use reaches PostgreSQL
 * through a loopback TCP proxy the test pauses; the flushes are called
 * directly, so the failed one is known to have run during the blip. Before,
 * a failed flush dropped its uses: the key showed its previous use for good.
 */
import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer, Option } from "effect"
import { inject } from "vitest"
import { ApiKeys } from "../../src/identity/ApiKeys.js"
import { PlatformCoreLive } from "../../src/platform/Platform.js"
import { type TcpProxy, tcpProxy } from "../support/TcpProxy.js"
import { createKey, tenant } from "../support/Tenants.js"
import { configLayer, freshDatabase, quietLogs, settingsFor } from "../support/TestPlatform.js"
import { baseUrl, SERVER_OPTIONS, testServerWithRelayOver } from "../support/TestServer.js"
import { listKeys } from "./api-keys-support.js"

const postgres = new URL(inject("postgresAdminUrl"))

class DatabaseProxy extends Context.Tag("test/DatabaseProxy")<DatabaseProxy, TcpProxy>() {}

/** The service over a fresh database, and a second instance's `ApiKeys` reaching it through a proxy. */
const serverAndKeysBehindProxy = Layer.unwrapScoped(
  Effect.gen(function* () {
    const url = yield* freshDatabase
    const proxy = yield* tcpProxy({ host: postgres.hostname, port: Number(postgres.port || 5432) })
    const platformBehindProxy = PlatformCoreLive.pipe(
      Layer.provide(configLayer(settingsFor("database", proxy.through(url)))),
      Layer.merge(quietLogs)
    )
    return Layer.mergeAll(
      testServerWithRelayOver("database", url),
      // Fresh: layers are shared by reference, and this instance must not be the server's.
      Layer.fresh(ApiKeys.Default.pipe(Layer.provide(platformBehindProxy))),
      Layer.succeed(DatabaseProxy, proxy)
    )
  })
)

layer(serverAndKeysBehindProxy, SERVER_OPTIONS)("API key last use across a database blip", (it) => {
  it.effect("a use while the database is out of reach shows in last_used_at once it is back", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const proxy = yield* DatabaseProxy
      const keys = yield* ApiKeys
      const owner = yield* tenant(base)
      const created = yield* createKey(owner)
      const lastUsedAt = Effect.map(
        listKeys(owner),
        ({ keys }) => keys.find((key) => key.id === created.api_key.id)!.last_used_at
      )

      // A first use, flushed: the key is cached in this instance from now on.
      expect(Option.isSome(yield* keys.authenticate(created.plaintext_key))).toBe(true)
      yield* keys.flushLastUsed
      const before = yield* lastUsedAt
      expect(before).not.toBeNull()

      yield* proxy.pause
      const usedAt = Date.now()
      const during = yield* Effect.ensuring(
        Effect.zipLeft(keys.authenticate(created.plaintext_key), keys.flushLastUsed),
        proxy.resume
      )
      expect(Option.isSome(during)).toBe(true)
      expect(yield* lastUsedAt).toEqual(before)

      yield* keys.flushLastUsed
      const after = yield* lastUsedAt
      expect(Date.parse(after!)).toBeGreaterThanOrEqual(usedAt)
    })
  )
})
