/**
 * Numbers a caller or a provider controls, at their extremes: a provider's
 * absurd token count, the highest prices and budgets, a worst case past the
 * cap, spend past what a window row can count, and a settings config grown by
 * many patches, a model name of kilobytes. None of them may stop usage
 * recording (for this workspace or any other) or answer anything but the
 * documented status.
 */
import { afterAll, describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { randomBytes } from "node:crypto"
import { MAX_PRICE_PER_MILLION_MINOR } from "../../src/billing/Domain.js"
import { MAX_COUNTED_TOKENS } from "../../src/gateway/UsageMeter.js"
import { MAX_BUDGET_MINOR } from "../../src/identity/Domain.js"
import { call, expectError, expectValidation, request } from "../support/Raw.js"
import { createKey } from "../support/Tenants.js"
import { SERVER_OPTIONS, testServerWithDatabase } from "../support/TestServer.js"
import { awaitUsage, GATEWAY_SETTINGS, gatewayTenant, monthSpend, setBudget, setPrice } from "./gateway-helpers.js"
import { startStubUpstream } from "./stub-upstream.js"

const stub = await startStubUpstream()
afterAll(() => stub.close())

/** The stub answers model `budget` with as many completion tokens as `max_tokens` asks for. */
const chatCall = (routeBase: string, token: string, body: Record<string, unknown>) =>
  request(`${routeBase}/chat_style/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ messages: [{ role: "user", content: "hi" }], ...body })
  })

const messagesCall = (routeBase: string, token: string, body: Record<string, unknown>) =>
  request(`${routeBase}/messages_style/v1/messages`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ max_tokens: 10, messages: [{ role: "user", content: "hi" }], ...body })
  })

const BIGINT_MAX = 9_223_372_036_854_775_807n

layer(testServerWithDatabase("database", GATEWAY_SETTINGS), SERVER_OPTIONS)("gateway numbers at their bounds", (it) => {
  describe("usage recording", () => {
    it.effect("a provider's absurd token count is counted at the bound, and later calls are still recorded", () =>
      Effect.gen(function* () {
        const { db, owner, gateway } = yield* gatewayTenant(stub.url)
        const other = yield* gatewayTenant(stub.url)
        const key = yield* createKey(owner)
        const otherKey = yield* createKey(other.owner)
        yield* setPrice(owner, "budget", 1, 1)

        const absurd = yield* chatCall(gateway.routeBase, key.plaintext_key, { model: "budget", max_tokens: 1e16 })
        expect(absurd.status, absurd.text).toBe(200)
        // Then an ordinary call here and in another workspace: their usage must still reach the event log.
        const after = yield* chatCall(gateway.routeBase, key.plaintext_key, { model: "plain" })
        const elsewhere = yield* chatCall(other.gateway.routeBase, otherKey.plaintext_key, { model: "plain" })
        expect([after.status, elsewhere.status]).toEqual([200, 200])

        const usage = yield* awaitUsage(db, owner.workspaceId, 2)
        expect(usage.map((event) => [event.model, event.completion_tokens])).toEqual([
          ["budget", MAX_COUNTED_TOKENS],
          ["plain", 3]
        ])
        // 5 prompt and 10^8 completion tokens at 1 cent per million each: 10^8 x 10 nanos, plus 50.
        expect(usage[0]!.cost_usd_nanos).toBe(String(MAX_COUNTED_TOKENS * 10 + 50))
        yield* awaitUsage(db, other.owner.workspaceId, 1)
      })
    )

    it.effect(
      "spend past what a window row can count saturates there, and every call's usage is recorded",
      () =>
        Effect.gen(function* () {
          const { db, owner, gateway } = yield* gatewayTenant(stub.url)
          const key = yield* createKey(owner)
          yield* setPrice(owner, "budget", 0, MAX_PRICE_PER_MILLION_MINOR)
          // Each call: 10^8 tokens at the highest price = 10^17 nanos; 100 of them pass the bigint maximum.
          const calls = 100
          const answers = yield* Effect.forEach(
            Array.from({ length: calls }, () => 0),
            () => chatCall(gateway.routeBase, key.plaintext_key, { model: "budget", max_tokens: MAX_COUNTED_TOKENS }),
            { concurrency: 10 }
          )
          expect(answers.filter((answer) => answer.status === 200)).toHaveLength(calls)
          const usage = yield* awaitUsage(db, owner.workspaceId, calls)
          expect(new Set(usage.map((event) => event.cost_usd_nanos))).toEqual(new Set(["100000000000000000"]))
          const spend = yield* monthSpend(db, owner.workspaceId)
          expect(spend.spent).toBe(BIGINT_MAX)
        }),
      60_000
    )
  })

  describe("answers without usage", () => {
    it.effect("a whole answer without a usage report is recorded with estimated counts, and charged", () =>
      Effect.gen(function* () {
        const { db, owner, gateway } = yield* gatewayTenant(stub.url)
        const key = yield* createKey(owner)
        const text = "words".repeat(30)
        const model = `odd:no-usage:${text}`
        yield* setPrice(owner, model, 100, 100)
        const answer = yield* chatCall(gateway.routeBase, key.plaintext_key, { model })
        expect(answer.status, answer.text).toBe(200)
        // Before, it was recorded as 0 tokens at no cost: under a budget, such a provider's calls were free.
        const usage = (yield* awaitUsage(db, owner.workspaceId, 1))[0]!
        // About 4 characters a token of the answer.
        expect(usage.completion_tokens).toBeGreaterThanOrEqual(Math.ceil(text.length / 4))
        expect(usage.prompt_tokens).toBeGreaterThan(0)
        expect(usage.metadata).toMatchObject({ usage_complete: false, usage_estimated: true })
        expect(BigInt(usage.cost_usd_nanos)).toBeGreaterThan(0n)
      })
    )
  })

  describe("model names", () => {
    it.effect("a model name past 256 characters is a 400 naming model, never sent; 256 is taken and recorded", () =>
      Effect.gen(function* () {
        const { db, owner, gateway } = yield* gatewayTenant(stub.url)
        const key = yield* createKey(owner)
        // Random hex, which PostgreSQL cannot compress: before, its usage record reached the analytics consumer
        // as a bucket dimension past the index row limit (2704 bytes): the batch failed through every retry,
        // holding that partition's analytics, and the event was dead-lettered; a 1 MB name was past Kafka's limit.
        const long = randomBytes(1500).toString("hex")
        expectValidation(yield* chatCall(gateway.routeBase, key.plaintext_key, { model: long }), "model")
        expectValidation(yield* messagesCall(gateway.routeBase, key.plaintext_key, { model: long }), "model")
        expect(stub.requests.some((seen) => seen.body["model"] === long)).toBe(false)

        const longest = `m${"0".repeat(255)}`
        const taken = yield* chatCall(gateway.routeBase, key.plaintext_key, { model: longest })
        expect(taken.status, taken.text).toBe(200)
        const usage = yield* awaitUsage(db, owner.workspaceId, 1)
        expect(usage[0]!.model).toBe(longest)
      })
    )
  })

  describe("prices and budgets", () => {
    it.effect(
      "a price or a budget cap above its bound is a 400 naming the field; the bounds themselves are taken",
      () =>
        Effect.gen(function* () {
          const { base, owner } = yield* gatewayTenant(stub.url)
          const price = (input: number, output: number) =>
            call(base, "PUT", "/v1/llm-pricing/some-model", {
              token: owner.jwt,
              body: { input_per_million_minor: input, output_per_million_minor: output }
            })
          expectValidation(yield* price(MAX_PRICE_PER_MILLION_MINOR + 1, 0), "input_per_million_minor")
          expectValidation(yield* price(0, 2 ** 53 - 1), "output_per_million_minor")
          expect((yield* price(MAX_PRICE_PER_MILLION_MINOR, MAX_PRICE_PER_MILLION_MINOR)).status).toBe(200)

          const cap = (capMinor: number) =>
            call(base, "PATCH", "/v1/settings", {
              token: owner.jwt,
              body: { config: { llm_budget: { cap_minor: capMinor, currency: "usd", window: "month" } } }
            })
          expectValidation(yield* cap(MAX_BUDGET_MINOR + 1), "config.llm_budget.cap_minor")
          expect((yield* cap(MAX_BUDGET_MINOR)).status).toBe(200)
        })
    )

    it.effect("a strict call whose worst case is past the whole cap is refused 402, and nothing stays reserved", () =>
      Effect.gen(function* () {
        const { db, owner, gateway } = yield* gatewayTenant(stub.url)
        const key = yield* createKey(owner)
        yield* setPrice(owner, "budget", 0, 1000)
        yield* setBudget(owner, 100, "month")
        // 10^15 tokens x 1000 cents per million: 10^19 nanos, more than a 64-bit ledger amount.
        const refused = yield* chatCall(gateway.routeBase, key.plaintext_key, { model: "budget", max_tokens: 1e15 })
        expectError(refused, 402, "budget_exceeded")
        expect(stub.requests.some((seen) => seen.body["max_tokens"] === 1e15)).toBe(false)
        const fits = yield* chatCall(gateway.routeBase, key.plaintext_key, { model: "budget", max_tokens: 1000 })
        expect(fits.status, fits.text).toBe(200)
        yield* awaitUsage(db, owner.workspaceId, 1)
      })
    )
  })

  describe("content by reference", () => {
    it.effect("a strict call's worst case counts each image or document named by URL or file id", () =>
      Effect.gen(function* () {
        const { db, owner, gateway } = yield* gatewayTenant(stub.url)
        const key = yield* createKey(owner)
        // 100 cents per million input tokens, a cap of 5 cents: 50,000 tokens, below one referenced part's 100,000.
        yield* setPrice(owner, "budget", 100, 0)
        yield* setBudget(owner, 5, "month")
        const withImage = (url: string) => [
          {
            role: "user",
            content: [
              { type: "text", text: "what is this?" },
              { type: "image_url", image_url: { url } }
            ]
          }
        ]
        const byUrl = yield* chatCall(gateway.routeBase, key.plaintext_key, {
          model: "budget",
          max_tokens: 10,
          messages: withImage("https://images.example/cat.png")
        })
        expectError(byUrl, 402, "budget_exceeded")
        const byFileId = yield* chatCall(gateway.routeBase, key.plaintext_key, {
          model: "budget",
          max_tokens: 10,
          messages: [{ role: "user", content: [{ type: "file", file: { file_id: "file-abc123" } }] }]
        })
        expectError(byFileId, 402, "budget_exceeded")
        const document = yield* messagesCall(gateway.routeBase, key.plaintext_key, {
          model: "budget",
          messages: [
            {
              role: "user",
              content: [{ type: "document", source: { type: "url", url: "https://docs.example/report.pdf" } }]
            }
          ]
        })
        expectError(document, 402, "budget_exceeded")
        expect(stub.requests.some((seen) => JSON.stringify(seen.body).includes("images.example"))).toBe(false)
        // Inline content is in the body, so its bytes bound it: admitted.
        const inline = yield* chatCall(gateway.routeBase, key.plaintext_key, {
          model: "budget",
          max_tokens: 10,
          messages: withImage("data:image/png;base64,iVBORw0KGgo=")
        })
        expect(inline.status, inline.text).toBe(200)
        yield* awaitUsage(db, owner.workspaceId, 1)
      })
    )
  })

  describe("choices", () => {
    it.effect(
      "a strict call for n choices reserves n times max_tokens: past the cap it is 402, spend stays under",
      () =>
        Effect.gen(function* () {
          const { db, owner, gateway } = yield* gatewayTenant(stub.url)
          const key = yield* createKey(owner)
          // One cent per output token, none per input token, and a cap of 100 cents: 100 tokens.
          yield* setPrice(owner, "budget", 0, 1_000_000)
          yield* setBudget(owner, 100, "month")
          // 10 choices of up to 20 tokens each: up to 200 tokens, twice the cap (the provider bills every choice).
          const tooMany = yield* chatCall(gateway.routeBase, key.plaintext_key, {
            model: "budget",
            max_tokens: 20,
            n: 10
          })
          expectError(tooMany, 402, "budget_exceeded")
          const fits = yield* chatCall(gateway.routeBase, key.plaintext_key, { model: "budget", max_tokens: 20, n: 4 })
          expect(fits.status, fits.text).toBe(200)
          const usage = yield* awaitUsage(db, owner.workspaceId, 1)
          expect(usage[0]!.completion_tokens).toBe(80)
          const spend = yield* monthSpend(db, owner.workspaceId)
          expect(spend.spent).toBeLessThanOrEqual(100n * 10_000_000n)
        })
    )
  })

  describe("settings config", () => {
    it.effect("keys added patch by patch stop at the config's bounds with a 400; removing keys makes room", () =>
      Effect.gen(function* () {
        const { base, owner } = yield* gatewayTenant(stub.url)
        const patch = (config: Record<string, unknown>) =>
          call(base, "PATCH", "/v1/settings", { token: owner.jwt, body: { config } })
        const keys = (prefix: string, count: number, value: unknown = true) =>
          Object.fromEntries(Array.from({ length: count }, (_, i) => [`${prefix}_${i}`, value]))

        // 256 keys at the top is the bound: two patches of 200 each would make 400.
        expect((yield* patch(keys("first", 200))).status).toBe(200)
        expectValidation(yield* patch(keys("second", 200)), "config")
        expect((yield* patch(keys("first", 200, null))).status).toBe(200)
        expect((yield* patch(keys("second", 200))).status).toBe(200)

        // Within the key bound, but large values add up past 256 KiB of stored JSON.
        const big = "x".repeat(60_000)
        for (const index of [0, 1, 2]) {
          expect((yield* patch({ [`big_${index}`]: big })).status).toBe(200)
        }
        const error = expectValidation(yield* patch({ big_3: big, big_4: big }), "config")
        expect(error.message).toContain("262,144 bytes")
        const settings = yield* call(base, "GET", "/v1/settings", { token: owner.jwt })
        const stored = (settings.body as { config: Record<string, unknown> }).config
        expect(Object.keys(stored).filter((name) => name.startsWith("big_"))).toEqual(["big_0", "big_1", "big_2"])
      })
    )
  })
})
