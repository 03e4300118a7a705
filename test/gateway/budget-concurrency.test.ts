/**
 * Strict budget admission under concurrency: 200 requests at once, each
 * bounding its output (max_tokens) so that its worst case costs exactly one
 * cent, against a cap of 10 cents. Exactly 10 are admitted and the recorded
 * spend never passes the cap, in one API process and across two processes
 * over the same database.
 */
import { afterAll, expect, layer } from "@effect/vitest"
import { HttpServer } from "@effect/platform"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import { queryDatabase } from "../support/Database.js"
import { eventually } from "../support/Eventually.js"
import { expectError, type JsonResponse, request } from "../support/Raw.js"
import { createKey, type Tenant } from "../support/Tenants.js"
import { SERVER_OPTIONS, testServerOver, testServerWithDatabase } from "../support/TestServer.js"
import { awaitUsage, GATEWAY_SETTINGS, gatewayTenant, monthSpend, setBudget, setPrice } from "./gateway-helpers.js"
import { startStubUpstream } from "./stub-upstream.js"

const stub = await startStubUpstream()
afterAll(() => stub.close())

const CAP_MINOR = 10
const CENT_NANOS = 10_000_000n
// The stub answers model `budget` with completion tokens = max_tokens: 1000 tokens x 1000 cents per million = 1 cent.
const MAX_TOKENS = 1000

/** A budget of 10 cents a month and a price that makes each strict request cost exactly 1 cent (input is free). */
const prepare = (owner: Tenant) =>
  Effect.gen(function* () {
    yield* setPrice(owner, "budget", 0, 1000)
    yield* setBudget(owner, CAP_MINOR, "month")
  })

const fire = (urls: ReadonlyArray<string>, count: number, token: string, body: (i: number) => unknown) =>
  Effect.forEach(
    Array.from({ length: count }, (_, i) => i),
    (i) =>
      request(urls[i % urls.length]!, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify(body(i)),
        signal: AbortSignal.timeout(60_000)
      }),
    { concurrency: "unbounded" }
  )

const tally = (responses: ReadonlyArray<JsonResponse>) => {
  const admitted = responses.filter((response) => response.status === 200)
  const refused = responses.filter((response) => response.status === 402)
  expect(
    admitted.length + refused.length,
    responses.map((r) => `${r.status} ${r.text}`).find((t) => !/^(200|402)/.test(t))
  ).toBe(responses.length)
  for (const response of refused) expectError(response, 402, "budget_exceeded")
  return { admitted: admitted.length, refused: refused.length }
}

/** After the calls settle: spend is exactly what was admitted, within the cap, nothing left reserved. */
const expectSettled = (db: string, owner: Tenant, admitted: number, capMinor = CAP_MINOR) =>
  Effect.gen(function* () {
    const usage = yield* awaitUsage(db, owner.workspaceId, admitted)
    expect(usage.every((event) => event.cost_usd_nanos === CENT_NANOS.toString())).toBe(true)
    const ledger = yield* eventually(
      Effect.flatMap(monthSpend(db, owner.workspaceId), (spend) =>
        spend.reserved === 0n ? Effect.succeed(spend) : Effect.fail(new Error(`still reserved: ${spend.reserved}`))
      )
    )
    expect(ledger.spent).toBe(BigInt(admitted) * CENT_NANOS)
    expect(ledger.spent <= BigInt(capMinor) * CENT_NANOS).toBe(true)
  })

layer(testServerWithDatabase("database", GATEWAY_SETTINGS), SERVER_OPTIONS)("strict budget admission", (it) => {
  it.effect(
    "200 concurrent strict requests at a cap that fits 10: exactly 10 admitted, spend never past the cap",
    () =>
      Effect.gen(function* () {
        const { db, owner, gateway } = yield* gatewayTenant(stub.url)
        const key = yield* createKey(owner)
        yield* prepare(owner)

        const responses = yield* fire(
          [`${gateway.routeBase}/chat_style/chat/completions`],
          200,
          key.plaintext_key,
          (i) => ({
            model: "budget",
            max_tokens: MAX_TOKENS,
            messages: [{ role: "user", content: `request ${i}` }]
          })
        )
        const { admitted, refused } = tally(responses)
        expect(admitted).toBe(CAP_MINOR)
        expect(refused).toBe(190)
        yield* expectSettled(db, owner, admitted)

        // The window is spent: one more strict request is refused too.
        const again = yield* fire([`${gateway.routeBase}/chat_style/chat/completions`], 1, key.plaintext_key, () => ({
          model: "budget",
          max_tokens: 1,
          messages: []
        }))
        expectError(again[0]!, 402, "budget_exceeded")
      }),
    120_000
  )

  it.effect(
    "far from the cap calls draw from leases: 150 concurrent at a cap that fits 100 admit exactly 100, and the leases go back",
    () =>
      Effect.gen(function* () {
        const { db, owner, gateway } = yield* gatewayTenant(stub.url)
        const key = yield* createKey(owner)
        yield* setPrice(owner, "budget", 0, 1000)
        yield* setBudget(owner, 100, "month")

        const responses = yield* fire(
          [`${gateway.routeBase}/chat_style/chat/completions`],
          150,
          key.plaintext_key,
          (i) => ({
            model: "budget",
            max_tokens: MAX_TOKENS,
            messages: [{ role: "user", content: `request ${i}` }]
          })
        )
        const { admitted, refused } = tally(responses)
        expect([admitted, refused]).toEqual([100, 50])
        // Leases held at most 20 calls each: fewer ledger reservations than calls.
        const rows = yield* queryDatabase<{ n: string }>(
          db,
          "select count(*)::text as n from llm_budget_reservations where workspace_id = $1",
          [owner.workspaceId]
        )
        expect(Number(rows[0]!.n)).toBeLessThan(100)
        yield* expectSettled(db, owner, admitted, 100)
      }),
    120_000
  )

  it.effect(
    "the same across two API processes over one database",
    () =>
      Effect.gen(function* () {
        const { base, db, owner, gateway } = yield* gatewayTenant(stub.url)
        const key = yield* createKey(owner)
        yield* prepare(owner)

        const scope = yield* Scope.make()
        const context = yield* Layer.buildWithScope(testServerOver("database", db, GATEWAY_SETTINGS), scope)
        const address = Context.get(context, HttpServer.HttpServer).address
        const second = `http://127.0.0.1:${address._tag === "TcpAddress" ? address.port : 0}`
        const path = `/v1/gateway/${gateway.routeId}/messages_style/v1/messages`

        const responses = yield* fire([`${base}${path}`, `${second}${path}`], 200, key.plaintext_key, (i) => ({
          model: "budget",
          max_tokens: MAX_TOKENS,
          messages: [{ role: "user", content: `request ${i}` }]
        }))
        const { admitted } = tally(responses)
        expect(admitted).toBe(CAP_MINOR)
        // Every other request went to the second process; which process won each admission varies by run.
        expect(responses.filter((_, i) => i % 2 === 1)).toHaveLength(100)
        yield* expectSettled(db, owner, admitted)
        yield* Scope.close(scope, Exit.void)
      }),
    120_000
  )
})
