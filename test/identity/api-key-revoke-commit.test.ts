/**
 * A runtime key revoked while a request authenticates with it: the service
 * reaches PostgreSQL through a loopback proxy that holds the revocation's
 * COMMIT (a request in that window reads the key as still active) and loses
 * every change notice (the other instances' safety net, gone here), so only
 * this instance's own cache drop can end the key.
 */
import { expect, layer } from "@effect/vitest"
import { Context, Effect, Fiber, Layer } from "effect"
import { inject } from "vitest"
import { expectFailure } from "../support/Api.js"
import { type TcpProxy, tcpProxy } from "../support/TcpProxy.js"
import { createKey, keyClient, tenant } from "../support/Tenants.js"
import { freshDatabase } from "../support/TestPlatform.js"
import { baseUrl, SERVER_OPTIONS, testServerWithRelayOver } from "../support/TestServer.js"

class DatabaseProxy extends Context.Tag("test/DatabaseProxy")<DatabaseProxy, TcpProxy>() {}

const postgres = new URL(inject("postgresAdminUrl"))

const serverBehindProxy = Layer.unwrapScoped(
  Effect.gen(function* () {
    const url = yield* freshDatabase
    const proxy = yield* tcpProxy({ host: postgres.hostname, port: Number(postgres.port || 5432) })
    return Layer.merge(testServerWithRelayOver("database", proxy.through(url)), Layer.succeed(DatabaseProxy, proxy))
  })
)

layer(serverBehindProxy, SERVER_OPTIONS)("API key revocation racing a request", (it) => {
  it.effect("a key read by a request while its revocation commits is refused once the revocation has answered", () =>
    Effect.gen(function* () {
      const proxy = yield* DatabaseProxy
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const created = yield* createKey(owner)
      const key = yield* keyClient(base, created)
      yield* key.environments.listEnvironments({})
      yield* proxy.muffleNotices

      const commit = yield* proxy.holdCommit("status = 'revoked'")
      const revoking = yield* Effect.fork(owner.api.apiKeys.revokeApiKeys({ payload: { ids: [created.api_key.id] } }))
      yield* commit.held
      // Not yet revoked for anyone: the request is answered, and reads the key while the revocation is open.
      yield* key.environments.listEnvironments({})
      yield* commit.release
      const { api_keys } = yield* Fiber.join(revoking)
      expect(api_keys.map((revoked) => revoked.status)).toEqual(["revoked"])

      yield* expectFailure(key.environments.listEnvironments({}), 401)
    })
  )
})
