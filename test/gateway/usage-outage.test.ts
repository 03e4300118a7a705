/**
 * A gateway call that ends while PostgreSQL is out of reach (the service
 * reaches it through a loopback TCP proxy the test pauses for 3 seconds):
 * the provider answered and the client got its answer, so the call's usage
 * record (the `llm-usage` event: billing, budget meters, analytics) must be
 * written once the database is back. Before, the usage writer's retries
 * never ran (the transaction's failure is a defect, which `Effect.retry`
 * passes over) and the record was dropped with an error in the log.
 *
 * A usage commit whose acknowledgement is lost (PostgreSQL committed, the
 * connection was cut before its answer came back) is run again; the call's
 * spend must still count once in the budget (before, it counted twice when
 * the usage event had already left the outbox).
 */
import { afterAll, expect, layer } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { DatabaseProxy, serverBehindDatabaseProxy } from "../support/DatabaseProxy.js"
import { eventually } from "../support/Eventually.js"
import { request } from "../support/Raw.js"
import { createKey } from "../support/Tenants.js"
import { SERVER_OPTIONS } from "../support/TestServer.js"
import { awaitUsage, GATEWAY_SETTINGS, gatewayTenant, monthSpend, setPrice } from "./gateway-helpers.js"
import { startStubUpstream } from "./stub-upstream.js"

const stub = await startStubUpstream()
afterAll(() => stub.close())

const chatCall = (routeBase: string, token: string, model: string) =>
  request(`${routeBase}/chat_style/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }] })
  })

layer(serverBehindDatabaseProxy(GATEWAY_SETTINGS), SERVER_OPTIONS)("gateway usage across a database outage", (it) => {
  it.effect(
    "a call that ends while the database is unreachable is recorded once it is back",
    () =>
      Effect.gen(function* () {
        const proxy = yield* DatabaseProxy
        const { db, owner, gateway } = yield* gatewayTenant(stub.url)
        const key = yield* createKey(owner)
        // A first call loads the route, key and price into the caches, so the next needs no database to answer.
        const first = yield* chatCall(gateway.routeBase, key.plaintext_key, "plain")
        expect(first.status, first.text).toBe(200)
        yield* awaitUsage(db, owner.workspaceId, 1)

        const held = yield* Effect.fork(chatCall(gateway.routeBase, key.plaintext_key, "slow"))
        yield* eventually(
          Effect.suspend(() =>
            stub.requests.some((seen) => seen.body["model"] === "slow") ? Effect.void : Effect.fail("not yet")
          )
        )
        yield* proxy.pause
        stub.release()
        const answer = yield* Fiber.join(held)
        expect(answer.status, answer.text).toBe(200)
        yield* Effect.sleep("3 seconds") // the outage itself
        yield* proxy.resume

        const usage = yield* awaitUsage(db, owner.workspaceId, 2)
        expect(usage.map((event) => event.model)).toEqual(["plain", "slow"])
      }),
    90_000
  )

  it.effect(
    "a usage commit whose acknowledgement is lost counts the call's spend once",
    () =>
      Effect.gen(function* () {
        const proxy = yield* DatabaseProxy
        const { db, owner, gateway } = yield* gatewayTenant(stub.url)
        const key = yield* createKey(owner)
        yield* setPrice(owner, "plain", 1_000_000, 1_000_000)
        // The settlement statement's text: the lost answer is the COMMIT of the transaction adding spend.
        const commit = yield* proxy.loseCommitAnswer("spent_usd_nanos = least(")
        const first = yield* chatCall(gateway.routeBase, key.plaintext_key, "plain")
        expect(first.status, first.text).toBe(200)
        yield* commit.committed
        // The committed usage event is published (it leaves the outbox) before the writer learns that its
        // connection is gone and runs the commit again.
        yield* awaitUsage(db, owner.workspaceId, 1)
        yield* commit.cut
        // One writer commits in order: the second call's record lands after the first's commit was run again.
        const second = yield* chatCall(gateway.routeBase, key.plaintext_key, "plain")
        expect(second.status, second.text).toBe(200)
        const usage = yield* awaitUsage(db, owner.workspaceId, 2)
        const charged = usage.reduce((sum, event) => sum + BigInt(event.cost_usd_nanos), 0n)
        expect(charged > 0n).toBe(true)
        const ledger = yield* monthSpend(db, owner.workspaceId)
        expect(ledger.spent).toBe(charged)
      }),
    90_000
  )
})
