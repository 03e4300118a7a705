/**
 * A hot-path cache entry read while its change commits: the service reaches
 * PostgreSQL through a loopback proxy that holds the change's COMMIT (a
 * request in that window reads the old value, rightly) and loses every
 * change notice (the other instances' safety net, gone here), so only this
 * instance's own drop, once the change has committed, can end the old value.
 * Before, the drop came before the commit and the request in between cached
 * the old value again until the next refresh (a minute).
 */
import { afterAll, expect, layer } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { expectFailure } from "../support/Api.js"
import { DatabaseProxy, serverBehindDatabaseProxy } from "../support/DatabaseProxy.js"
import { request } from "../support/Raw.js"
import { createKey, keyClient, tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS } from "../support/TestServer.js"
import { awaitUsage, GATEWAY_SETTINGS, gatewayTenant, setPrice } from "../gateway/gateway-helpers.js"
import { startStubUpstream } from "../gateway/stub-upstream.js"

const stub = await startStubUpstream()
afterAll(() => stub.close())

/** Runs `change` with its COMMIT held while `meanwhile` runs; answers what `change` answered. */
const heldWhile = <A, E, B, E2>(marker: string, change: Effect.Effect<A, E>, meanwhile: Effect.Effect<B, E2>) =>
  Effect.gen(function* () {
    const proxy = yield* DatabaseProxy
    yield* proxy.muffleNotices
    const commit = yield* proxy.holdCommit(marker)
    const changing = yield* Effect.fork(change)
    yield* commit.held
    yield* meanwhile
    yield* commit.release
    return yield* Fiber.join(changing)
  })

layer(serverBehindDatabaseProxy(GATEWAY_SETTINGS), SERVER_OPTIONS)("cache drops once a change has committed", (it) => {
  it.effect("a key read by a request while its revocation commits is refused once the revocation has answered", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const created = yield* createKey(owner)
      const key = yield* keyClient(base, created)
      yield* key.environments.listEnvironments({})

      const { api_keys } = yield* heldWhile(
        "status = 'revoked'",
        owner.api.apiKeys.revokeApiKeys({ payload: { ids: [created.api_key.id] } }),
        // Not yet revoked for anyone: answered, reading the key while the revocation is open.
        key.environments.listEnvironments({})
      )
      expect(api_keys.map((revoked) => revoked.status)).toEqual(["revoked"])
      yield* expectFailure(key.environments.listEnvironments({}), 401)
    })
  )

  it.effect("a gateway call pricing while a price change commits leaves the next call at the new price", () =>
    Effect.gen(function* () {
      const { db, owner, gateway } = yield* gatewayTenant(stub.url)
      const key = yield* createKey(owner)
      const chatCall = request(`${gateway.routeBase}/chat_style/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${key.plaintext_key}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "plain", messages: [{ role: "user", content: "hi" }] })
      }).pipe(Effect.tap((answer) => expect(answer.status, answer.text).toBe(200)))
      yield* setPrice(owner, "plain", 1_000_000, 1_000_000)
      yield* chatCall

      yield* heldWhile("into llm_prices", setPrice(owner, "plain", 3_000_000, 3_000_000), chatCall)
      yield* chatCall
      const costs = (yield* awaitUsage(db, owner.workspaceId, 3)).map((usage) => BigInt(usage.cost_usd_nanos))
      expect(costs[0]! > 0n).toBe(true)
      expect(costs).toEqual([costs[0], costs[0], costs[0]! * 3n])
    })
  )
})
