/**
 * Several instances of the service over one database (the deployment the
 * identity design assumes: key caches and login counters are per process).
 * A second instance must serve the same users and shut down promptly, even
 * though the first instance holds the outbox relay lock.
 */
import { expect, layer } from "@effect/vitest"
import { HttpServer } from "@effect/platform"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import {
  baseUrl,
  SERVER_OPTIONS,
  TestDatabaseUrl,
  testServerWithDatabase,
  testServerWithRelayOver
} from "../support/TestServer.js"
import { clientAt, expectFailure } from "../support/Api.js"
import { createKey, keyClient, tenant } from "../support/Tenants.js"

layer(testServerWithDatabase("database"), SERVER_OPTIONS)("a second instance over the same database", (it) => {
  it.effect(
    "serves the same users and keys, sees revocations, and stops without hanging",
    () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const db = yield* TestDatabaseUrl
        const owner = yield* tenant(base)
        const key = yield* createKey(owner)

        const scope = yield* Scope.make()
        const context = yield* Layer.buildWithScope(testServerWithRelayOver("database", db), scope)
        const address = Context.get(context, HttpServer.HttpServer).address
        const second = `http://127.0.0.1:${address._tag === "TcpAddress" ? address.port : 0}`

        // Same users (a fresh login there) and the same runtime keys.
        const session = yield* (yield* clientAt(second)).auth.login({
          payload: { username: owner.username, password: owner.password }
        })
        const sessionAtSecond = yield* clientAt(second, { token: session.jwt })
        const { environments } = yield* sessionAtSecond.environments.listEnvironments({})
        expect(environments[0]!.id).toBe(owner.defaultEnvironmentId)
        const keyAtSecond = yield* keyClient(second, key)
        yield* keyAtSecond.environments.listEnvironments({})

        // A revocation on the first instance reaches the second within its key cache TTL (5 s).
        yield* owner.api.apiKeys.revokeApiKeys({ payload: { ids: [key.api_key.id] } })
        yield* Effect.sleep("5500 millis")
        yield* expectFailure(keyAtSecond.environments.listEnvironments({}), 401, "invalid_api_key")

        // Shutting the second instance down does not hang on the relay lock the first one holds.
        // A hang never ends; the bound only has to be far above a loaded machine's shutdown time.
        const closed = yield* Scope.close(scope, Exit.void).pipe(Effect.timeout("30 seconds"), Effect.either)
        expect(closed._tag, "the second instance did not stop within 30 s").toBe("Right")
      }),
    60_000
  )
})
