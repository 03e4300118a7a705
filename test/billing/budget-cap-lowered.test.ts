/**
 * Lowering the LLM budget's cap takes effect at once for strict admission:
 * a budget lease this process took under the old cap (a share of it, for
 * about a second of calls) no longer admits calls, and its remainder goes
 * back, so an admin who cuts the cap to stop runaway spend is obeyed.
 */
import { afterAll, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { eventually } from "../support/Eventually.js"
import { createKey } from "../support/Tenants.js"
import { SERVER_OPTIONS, testServerWithDatabase } from "../support/TestServer.js"
import { request } from "../support/Raw.js"
import { GATEWAY_SETTINGS, gatewayTenant, monthSpend, setBudget, setPrice } from "../gateway/gateway-helpers.js"
import { startStubUpstream } from "../gateway/stub-upstream.js"

const stub = await startStubUpstream()
afterAll(() => stub.close())

const CENT_NANOS = 10_000_000n

layer(testServerWithDatabase("database", GATEWAY_SETTINGS), SERVER_OPTIONS)("lowering the LLM budget cap", (it) => {
  it.effect(
    "calls after the cap was lowered are admitted against the new cap, not a lease taken under the old one",
    () =>
      Effect.gen(function* () {
        const { db, gateway, owner } = yield* gatewayTenant(stub.url)
        const key = yield* createKey(owner)
        // The stub's `budget` model uses max_tokens completion tokens: 1000 x 1000 cents per million = 1 cent a call.
        yield* setPrice(owner, "budget", 0, 1000)
        yield* setBudget(owner, 100, "month")
        const send = (count: number) =>
          Effect.forEach(
            Array.from({ length: count }, (_, i) => i),
            (i) =>
              request(`${gateway.routeBase}/chat_style/chat/completions`, {
                method: "POST",
                headers: { authorization: `Bearer ${key.plaintext_key}`, "content-type": "application/json" },
                body: JSON.stringify({
                  model: "budget",
                  max_tokens: 1000,
                  messages: [{ role: "user", content: `${i}` }]
                }),
                signal: AbortSignal.timeout(60_000)
              }),
            { concurrency: "unbounded" }
          )

        // Far from the cap: the call is drawn from a lease of 20 calls' worst cases.
        expect((yield* send(1)).map((response) => response.status)).toEqual([200])
        yield* setBudget(owner, 5, "month")
        const statuses = (yield* send(20)).map((response) => response.status)
        expect(statuses.filter((status) => status !== 402 && status !== 200)).toEqual([])
        // 1 cent spent before, 4 more fit under 5 cents.
        expect(statuses.filter((status) => status === 200)).toHaveLength(4)
        const ledger = yield* eventually(
          Effect.flatMap(monthSpend(db, owner.workspaceId), (spend) =>
            spend.reserved === 0n && spend.spent === 5n * CENT_NANOS
              ? Effect.succeed(spend)
              : Effect.fail(new Error(`spent ${spend.spent}, reserved ${spend.reserved}`))
          )
        )
        expect(ledger.spent).toBe(5n * CENT_NANOS)
      }),
    120_000
  )
})
