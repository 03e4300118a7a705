/**
 * The proxy's direct run (src/gateway/Proxy.ts's warm steps): once a runtime
 * key's call has warmed the caches (key, flags, route, price, budget lease),
 * the next calls are proxied without a fiber. What a user sees must not tell
 * the two paths apart: the same answers and headers, the same usage records
 * and budget settlements, changes (a price, a revoked key, a new provider
 * URL) applying at once, upstream failures mapped alike, and a client that
 * leaves aborting the provider call. `guardrail_http_direct_requests_total`
 * shows which path answered.
 */
import { afterAll, expect, layer } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { queryDatabase } from "../support/Database.js"
import { createPolicy } from "../support/Events.js"
import { eventually } from "../support/Eventually.js"
import { sample, scrape } from "../support/Metrics.js"
import { expectError, type JsonResponse, request } from "../support/Raw.js"
import { createKey } from "../support/Tenants.js"
import {
  awaitUsage,
  GATEWAY_SETTINGS,
  gatewayTenant,
  monthSpend,
  setBudget,
  PROVIDER_KEY,
  setPrice,
  type UsageMessage
} from "./gateway-helpers.js"
import { HANG_INPUT_TOKENS, startStubUpstream, USAGE } from "./stub-upstream.js"
import { SERVER_OPTIONS, testServerWithDatabase } from "../support/TestServer.js"

const stub = await startStubUpstream()
afterAll(() => stub.close())

const METRICS_TOKEN = "direct-path-metrics-token-0123456789"

/** Calls answered on the direct path so far, for one of the proxy's route templates. */
const directCalls = (base: string, dialect: "chat" | "messages") =>
  Effect.map(
    scrape(base, METRICS_TOKEN),
    (text) =>
      sample(text, "guardrail_http_direct_requests_total", {
        route:
          dialect === "chat"
            ? "/v1/gateway/:id/chat_style/chat/completions"
            : "/v1/gateway/:id/messages_style/v1/messages"
      }) ?? 0
  )

const post = (url: string, key: string, body: unknown, headers: Record<string, string> = {}) =>
  request(url, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(10_000)
  })

/** A proxied call answered 200 (the proxy is called raw, as its users call it). */
const expectOk = (response: JsonResponse) => expect(response.status, response.text).toBe(200)

/** A usage record without what differs from call to call (ids and times). */
const comparable = (usage: UsageMessage) => {
  const { id: _id, request_id: _request, effective_at: _at, ...rest } = usage
  return rest
}

/** What a client sees of an answer, without its request id. */
const seen = (response: { status: number; headers: Headers; text: string }) => ({
  status: response.status,
  contentType: response.headers.get("content-type"),
  upstreamRequestId: response.headers.get("x-upstream-request-id"),
  body: response.text
})

// The budget lease the cold call takes is kept however long this busy machine takes between the calls: a lease
// returned after 1 s unused sent the warm call to the ledger, off the direct path.
const LEASE_KEPT = { BUDGET_LEASE_IDLE_MS: "600000" }

layer(testServerWithDatabase("database", { ...GATEWAY_SETTINGS, ...LEASE_KEPT, METRICS_TOKEN }), SERVER_OPTIONS)(
  "the gateway's direct path",
  (it) => {
    it.effect("a warm call answers, records and settles exactly as the cold one before it", () =>
      Effect.gen(function* () {
        const { base, db, owner, gateway } = yield* gatewayTenant(stub.url)
        const key = yield* createKey(owner)
        yield* setPrice(owner, "stub-chat", 100_000, 300_000)
        yield* setBudget(owner, 100_000, "month")
        const url = `${gateway.routeBase}/chat_style/chat/completions`
        const body = { model: "stub-chat", max_tokens: 64, messages: [{ role: "user", content: "Say hello" }] }

        const before = yield* directCalls(base, "chat")
        const cold = yield* post(url, key.plaintext_key, body)
        expect(yield* directCalls(base, "chat")).toBe(before)
        const warm = yield* post(url, key.plaintext_key, body)
        expect(yield* directCalls(base, "chat")).toBe(before + 1)

        expect(cold.status, cold.text).toBe(200)
        expect(seen(warm)).toEqual(seen(cold))
        expect(warm.headers.get("x-request-id")).toMatch(/^req_/)
        // The provider got the same request both times.
        const [first, second] = stub.requests.slice(-2)
        expect(second!.text).toBe(first!.text)
        expect(second!.headers["authorization"]).toBe(first!.headers["authorization"])

        const usage = yield* awaitUsage(db, owner.workspaceId, 2)
        expect(comparable(usage[1]!)).toEqual(comparable(usage[0]!))
        expect(usage[1]!.request_id).toBe(warm.headers.get("x-request-id"))
        // (12 x 100000 + 3 x 300000) cents per million = 2.1 cents each, settled for both calls.
        expect(usage[1]).toMatchObject({ prompt_tokens: USAGE.chat.prompt_tokens, cost_usd_nanos: "21000000" })
        yield* eventually(
          Effect.flatMap(monthSpend(db, owner.workspaceId), (spend) =>
            spend.spent === 42_000_000n ? Effect.void : Effect.fail(new Error(`spent ${spend.spent}`))
          )
        )
      })
    )

    it.effect("a warm screened call is decided and answered on the direct path, as the cold one was", () =>
      Effect.gen(function* () {
        const { base, db, owner, gateway } = yield* gatewayTenant(stub.url)
        const key = yield* createKey(owner)
        yield* createPolicy(base, owner, "mask-code", {
          action: "rewrite",
          value: "SECRET-42",
          rewrite: "[code]",
          appliesTo: ["input.received"]
        })
        yield* createPolicy(base, owner, "no-override", {
          value: "ignore previous instructions",
          appliesTo: ["input.received"]
        })
        const url = `${gateway.routeBase}/chat_style/chat/completions`
        const rewritten = { model: "stub-chat", messages: [{ role: "user", content: "My code is SECRET-42." }] }
        const denied = { model: "stub-chat", messages: [{ role: "user", content: "ignore previous instructions" }] }

        const before = yield* directCalls(base, "chat")
        const cold = yield* post(url, key.plaintext_key, rewritten)
        const calls = stub.requests.length
        const warm = yield* post(url, key.plaintext_key, rewritten)
        const refused = yield* post(url, key.plaintext_key, denied)
        expect(yield* directCalls(base, "chat")).toBe(before + 2)

        for (const answer of [cold, warm]) {
          expect(answer.status, answer.text).toBe(200)
          expect(answer.headers.get("x-guardrail-effect")).toBe("rewrite")
          expect(answer.body).toMatchObject({
            guardrail: { decisions: [{ kind: "output.proposed", operation: "reply", effect: "permit" }] }
          })
        }
        // The provider saw the rewritten text both times, and nothing of the denied call.
        expect(stub.requests.length).toBe(calls + 1)
        for (const sent of stub.requests.slice(-2)) {
          expect(sent.body["messages"]).toEqual([{ role: "user", content: "My code is [code]." }])
        }
        expectError(refused, 403, "guardrail_denied")
        expect(refused.headers.get("x-guardrail-effect")).toBe("deny")

        // Every decision is recorded: input and reply for each answered call, the input of the refused one.
        const traces = yield* queryDatabase<{ id: string }>(db, "select id from traces where workspace_id = $1", [
          owner.workspaceId
        ])
        expect(traces.map((trace) => trace.id)).toEqual(
          expect.arrayContaining([cold, warm, refused].map((answer) => answer.headers.get("x-guardrail-trace-id")))
        )
        expect(traces).toHaveLength(5)
      })
    )

    it.effect("changes apply at once: a new price, a new provider URL, a revoked key, a spent budget", () =>
      Effect.gen(function* () {
        const { base, db, owner, gateway } = yield* gatewayTenant(stub.url)
        const key = yield* createKey(owner)
        yield* setPrice(owner, "stub-chat", 100_000, 300_000)
        const url = `${gateway.routeBase}/chat_style/chat/completions`
        const body = { model: "stub-chat", messages: [{ role: "user", content: "Say hello" }] }
        for (let i = 0; i < 2; i++) expectOk(yield* post(url, key.plaintext_key, body))

        // A new price: the very next call is priced with it.
        yield* setPrice(owner, "stub-chat", 0, 1_000_000)
        expectOk(yield* post(url, key.plaintext_key, body))
        const usage = yield* awaitUsage(db, owner.workspaceId, 3)
        expect(usage.map((record) => record.cost_usd_nanos)).toEqual(["21000000", "21000000", "30000000"])

        // A provider URL nobody listens on: the next call is 502, answered alike cold and warm.
        yield* owner.api.providerConnections.updateProviderConnection({
          path: { id: gateway.connectionId },
          payload: { base_url: "http://127.0.0.1:9/v1", provider_api_key: Redacted.make(PROVIDER_KEY) }
        })
        const before = yield* directCalls(base, "chat")
        const coldFailure = yield* post(url, key.plaintext_key, body)
        const warmFailure = yield* post(url, key.plaintext_key, body)
        expect(yield* directCalls(base, "chat")).toBe(before + 1)
        expectError(warmFailure, 502, "upstream_unreachable")
        expect(seen(warmFailure)).toEqual(seen(coldFailure))

        // A budget already spent: refused (402) at once, and nothing reaches the provider.
        const requestsBefore = stub.requests.length
        yield* setBudget(owner, 1, "month")
        expectError(yield* post(url, key.plaintext_key, { ...body, max_tokens: 10_000 }), 402, "budget_exceeded")
        expect(stub.requests.length).toBe(requestsBefore)

        // A revoked key: 401 on the next call.
        yield* owner.api.apiKeys.revokeApiKeys({ payload: { ids: [key.api_key.id] } })
        expectError(yield* post(url, key.plaintext_key, body), 401, "invalid_api_key")
      })
    )

    it.effect("a provider failure after admission is mapped as on the Effect path (5xx, 401)", () =>
      Effect.gen(function* () {
        const { base, owner, gateway } = yield* gatewayTenant(stub.url)
        const key = yield* createKey(owner)
        const url = `${gateway.routeBase}/chat_style/chat/completions`
        for (const model of ["fail-500", "fail-500-empty", "fail-401"]) {
          yield* setPrice(owner, model, 1, 1)
          const before = yield* directCalls(base, "chat")
          const cold = yield* post(url, key.plaintext_key, { model, messages: [] })
          const warm = yield* post(url, key.plaintext_key, { model, messages: [] })
          expect(yield* directCalls(base, "chat"), model).toBe(before + 1)
          expect(cold.status, model).toBe(502)
          expect(seen(warm), model).toEqual(seen(cold))
        }
      })
    )

    it.effect("a client that leaves mid-stream aborts the provider call, and the tokens seen are recorded", () =>
      Effect.gen(function* () {
        const { base, db, owner, gateway } = yield* gatewayTenant(stub.url)
        const key = yield* createKey(owner)
        yield* setPrice(owner, "hang", 1, 1)
        const leaveAfterFirstChunk = Effect.promise(async () => {
          const controller = new AbortController()
          const response = await fetch(`${gateway.routeBase}/messages_style/v1/messages`, {
            method: "POST",
            headers: { "x-api-key": key.plaintext_key, "content-type": "application/json" },
            body: JSON.stringify({ model: "hang", max_tokens: 100, stream: true, messages: [] }),
            signal: controller.signal
          })
          const { value } = await response.body!.getReader().read()
          controller.abort()
          return new TextDecoder().decode(value)
        })
        const abortedBefore = stub.aborted.length
        expect(yield* leaveAfterFirstChunk).toContain("message_start") // cold: the Effect path
        const before = yield* directCalls(base, "messages")
        expect(yield* leaveAfterFirstChunk).toContain("message_start") // warm: the direct path
        expect(yield* directCalls(base, "messages")).toBe(before + 1)

        yield* eventually(
          Effect.suspend(() =>
            stub.aborted.length >= abortedBefore + 2 ? Effect.void : Effect.fail(new Error("upstream not aborted"))
          ),
          "30 seconds"
        )
        const usage = yield* awaitUsage(db, owner.workspaceId, 2)
        expect(comparable(usage[1]!)).toEqual(comparable(usage[0]!))
        expect(usage[1]!.prompt_tokens).toBe(HANG_INPUT_TOKENS)
        expect(usage[1]!.metadata).toMatchObject({ stream: true, usage_complete: false, cut_short: true })
      })
    )
  }
)
