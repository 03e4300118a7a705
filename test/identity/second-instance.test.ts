/**
 * Several instances of the service over one database (the deployment the
 * identity design assumes: key caches and login counters are per process).
 * A second instance must serve the same users and shut down promptly, even
 * though the first instance holds the outbox relay lock.
 */
import { expect, layer } from "@effect/vitest"
import { HttpServer } from "@effect/platform"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import { baseUrl, TestDatabaseUrl, testServerWithDatabase, testServerWithRelayOver } from "../support/TestServer.js"
import { call, createKey, expectError, expectStatus, SERVER_OPTIONS, tenant } from "./http-helpers.js"

layer(testServerWithDatabase("database"), SERVER_OPTIONS)("a second instance over the same database", (it) => {
  it.effect(
    "serves the same users and keys, sees revocations, and stops without hanging",
    () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const db = yield* TestDatabaseUrl
        const owner = yield* tenant(base)
        const key = yield* createKey(base, owner)

        const scope = yield* Scope.make()
        const context = yield* Layer.buildWithScope(testServerWithRelayOver("database", db), scope)
        const address = Context.get(context, HttpServer.HttpServer).address
        const second = `http://127.0.0.1:${address._tag === "TcpAddress" ? address.port : 0}`

        // Same users (a fresh login there) and the same runtime keys.
        const session = expectStatus(
          yield* call(second, "POST", "/v1/auth/login", {
            body: { username: owner.username, password: owner.password }
          }),
          200
        )
        const environments = expectStatus(yield* call(second, "GET", "/v1/environments", { token: session.jwt }), 200)
        expect(environments.environments[0].id).toBe(owner.defaultEnvironmentId)
        expectStatus(yield* call(second, "GET", "/v1/environments", { token: key.plaintext_key }), 200)

        // A revocation on the first instance reaches the second within its key cache TTL (5 s).
        expectStatus(
          yield* call(base, "PATCH", "/v1/api-keys/batch/revoke", {
            token: owner.jwt,
            body: { ids: [key.api_key.id] }
          }),
          200
        )
        yield* Effect.sleep("5500 millis")
        expectError(
          yield* call(second, "GET", "/v1/environments", { token: key.plaintext_key }),
          401,
          "invalid_api_key"
        )

        // Shutting the second instance down does not hang on the relay lock the first one holds.
        // A hang never ends; the bound only has to be far above a loaded machine's shutdown time.
        const closed = yield* Scope.close(scope, Exit.void).pipe(Effect.timeout("30 seconds"), Effect.either)
        expect(closed._tag, "the second instance did not stop within 30 s").toBe("Right")
      }),
    60_000
  )
})
