/**
 * The direct runs of `POST /v1/events` (src/authorization/Authorization.ts)
 * and `POST /v1/runs/{id}/events` (src/runs/Runs.ts): once a runtime
 * key's request has warmed the caches, the next ones are answered without a
 * fiber. A user must not be able to tell the two paths apart: the same
 * decisions, findings, receipts and traces; changes to policies and keys
 * applying at once; one gap-free sequence per run whichever path appended;
 * the same 404 and 409 bodies. `guardrail_http_direct_requests_total`
 * shows which path answered.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { compactVerify, createLocalJWKSet } from "jose"
import { ApiKeyId } from "../../src/identity/Domain.js"
import { RunId } from "../../src/runs/Domain.js"
import { clientAt, expectFailure, jsonAt } from "../support/Api.js"
import { sample, scrape } from "../support/Metrics.js"
import { createKey, keyClient, tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import { setPolicyEnabled } from "./event-helpers.js"
import { createAgent, createPolicy, createRun, eventBody, propose, reply } from "../support/Events.js"

const METRICS_TOKEN = "direct-decisions-metrics-token-0123456789"
const AGENT = "support-bot"
const DECIDE_ROUTE = "/v1/events"
const APPEND_ROUTE = "/v1/runs/:id/events"

/** Requests answered on the direct path so far, for one route template. */
const directCalls = (base: string, route: string) =>
  Effect.map(
    scrape(base, METRICS_TOKEN),
    (text) => sample(text, "guardrail_http_direct_requests_total", { route }) ?? 0
  )

const isRecord = (value: unknown): value is Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** The own fields of a JSON object (or a decoded class), without `keys`. */
const without = (value: unknown, keys: ReadonlyArray<string>) =>
  Object.fromEntries(Object.entries(isRecord(value) ? value : {}).filter(([key]) => !keys.includes(key)))

/** A decision (as answered, or as a trace's payload keeps it) without what differs from call to call (ids and timing). */
const comparable = (decision: unknown) => {
  const rest = without(decision, ["intent_id", "receipt_id", "trace_id", "latency_ms"])
  const findings: ReadonlyArray<unknown> = Array.isArray(rest["findings"]) ? rest["findings"] : []
  return { ...rest, findings: findings.map((finding) => without(finding, ["id"])) }
}

/** A run event without its id and times. */
const comparableEvent = (event: unknown) => without(event, ["id", "created_at", "occurred_at", "sequence"])

/** The receipt's signed content, verified with nothing but the JWKS endpoint's public key. */
const verifiedReceipt = (base: string, token: string, receiptId: string) =>
  Effect.gen(function* () {
    const jwks = yield* (yield* clientAt(base)).receipts.jwks()
    const receipt = yield* (yield* clientAt(base, { token })).receipts.getReceipt({ path: { id: receiptId } })
    const verified = yield* Effect.promise(() =>
      compactVerify(receipt.jws, createLocalJWKSet({ keys: [...jwks.keys] }))
    )
    return JSON.parse(new TextDecoder().decode(verified.payload)) as { effect: string; trace_id: string }
  })

/** A new tenant with the agent profile and a policy denying "refund now". */
const refundTenant = Effect.gen(function* () {
  const base = yield* baseUrl
  const owner = yield* tenant(base)
  yield* createAgent(base, owner, AGENT)
  yield* createPolicy(base, owner, "no-refund-now", { value: "refund now" })
  return { base, owner }
})

layer(testServer("database", { METRICS_TOKEN }), SERVER_OPTIONS)("direct paths of decisions and run events", (it) => {
  it.effect("a warm decision answers, signs and records exactly as the cold one before it", () =>
    Effect.gen(function* () {
      const { base, owner } = yield* refundTenant
      yield* createPolicy(base, owner, "mask-code", { action: "rewrite", value: "SECRET-42", rewrite: "[code]" })
      const key = yield* createKey(owner)
      const session = `session-${Date.now()}`

      for (const [content, effect] of [
        ["You get a refund now.", "deny"],
        ["Your code is SECRET-42.", "rewrite"],
        ["Your order ships Monday.", "permit"]
      ] as const) {
        const before = yield* directCalls(base, DECIDE_ROUTE)
        const first = yield* propose(base, owner, AGENT, reply(content), {
          token: key.plaintext_key,
          session_id: session
        })
        const middle = yield* directCalls(base, DECIDE_ROUTE)
        const second = yield* propose(base, owner, AGENT, reply(content), {
          token: key.plaintext_key,
          session_id: session
        })
        const after = yield* directCalls(base, DECIDE_ROUTE)
        // The key's first use warms its cache on the Effect path; every decision after it is direct.
        expect(after - middle, content).toBe(1)
        if (effect === "deny") expect(middle - before).toBe(0)
        expect(second.effect).toBe(effect)
        expect(comparable(second)).toEqual(comparable(first))
        expect(second.trace_id).not.toBe(first.trace_id)

        // Both receipts verify offline and sign what was answered.
        for (const decision of [first, second]) {
          const signed = yield* verifiedReceipt(base, owner.jwt, decision.receipt_id)
          expect([signed.effect, signed.trace_id]).toEqual([decision.effect, decision.trace_id])
        }
      }

      // Both paths' traces are durable once answered, and read alike.
      const { traces } = yield* owner.api.traces.listTraces({ urlParams: { session_id: session } })
      expect(traces.map((trace) => trace.decision).sort()).toEqual([
        "deny",
        "deny",
        "permit",
        "permit",
        "rewrite",
        "rewrite"
      ])
      for (const effect of ["deny", "rewrite", "permit"]) {
        const [a, b] = traces.filter((trace) => trace.decision === effect)
        const { trace_id: _a, created_at: _ac, elapsed_ms: _ae, payload: pa, ...restA } = a!
        const { trace_id: _b, created_at: _bc, elapsed_ms: _be, payload: pb, ...restB } = b!
        expect(restB).toEqual(restA)
        expect(jsonAt(pb, "request")).toEqual(jsonAt(pa, "request"))
        expect(comparable(jsonAt(pb, "response"))).toEqual(comparable(jsonAt(pa, "response")))
      }
    })
  )

  it.effect("a workspace whose catalog was never changed is decided from memory after its first decision", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const key = yield* createKey(owner)
      const decide = () => propose(base, owner, AGENT, reply("Hello there."), { token: key.plaintext_key })

      expect((yield* decide()).effect).toBe("permit")
      const warm = yield* directCalls(base, DECIDE_ROUTE)
      for (let i = 0; i < 5; i++) expect((yield* decide()).effect).toBe("permit")
      expect(yield* directCalls(base, DECIDE_ROUTE)).toBe(warm + 5)
    })
  )

  it.effect("on the direct path, a disabled policy, a new one and a revoked key apply to the next decision", () =>
    Effect.gen(function* () {
      const { base, owner } = yield* refundTenant
      const key = yield* createKey(owner)
      const decide = (content: string) => propose(base, owner, AGENT, reply(content), { token: key.plaintext_key })

      expect((yield* decide("A refund now.")).effect).toBe("deny")
      const warm = yield* directCalls(base, DECIDE_ROUTE)
      expect((yield* decide("A refund now.")).effect).toBe("deny")
      expect(yield* directCalls(base, DECIDE_ROUTE)).toBe(warm + 1)

      yield* setPolicyEnabled(base, owner, "no-refund-now", false)
      expect((yield* decide("A refund now.")).effect).toBe("permit")
      yield* createPolicy(base, owner, "no-lawsuit", { value: "lawsuit" })
      expect((yield* decide("No lawsuit, please.")).effect).toBe("deny")

      yield* owner.api.apiKeys.revokeApiKeys({ payload: { ids: [ApiKeyId.make(key.api_key.id)] } })
      const revoked = yield* keyClient(base, key)
      yield* expectFailure(revoked.events.authorizeEvent({ payload: eventBody(owner, AGENT, reply("hello")) }), 401)
    })
  )

  it.effect("appends on either path share one gap-free sequence; 404 and 409 read the same", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const key = yield* createKey(owner)
      const byKey = yield* keyClient(base, key)
      const run = yield* createRun(base, owner, { agent_id: AGENT, kind: "chat_session" })
      const append = (runId: RunId, label: string) =>
        byKey.runs.appendRunEvent({ path: { id: runId }, payload: { kind: "custom", label, metadata: { label } } })

      const before = yield* directCalls(base, APPEND_ROUTE)
      const cold = yield* append(run.id, "e")
      const warm = yield* Effect.forEach(
        Array.from({ length: 20 }, (_, i) => i),
        () => append(run.id, "e"),
        { concurrency: "unbounded" }
      )
      const after = yield* directCalls(base, APPEND_ROUTE)
      expect(after - before).toBeGreaterThanOrEqual(20)
      for (const event of warm) expect(comparableEvent(event)).toEqual(comparableEvent(cold))
      const listed = (yield* owner.api.runs.listRunEvents({ path: { id: run.id }, urlParams: { limit: 100 } })).events
      expect(listed.map((event) => event.sequence)).toEqual(Array.from({ length: 21 }, (_, i) => i + 1))

      // Refusals come from the writer; the direct path answers them with the conventions' body.
      yield* expectFailure(append(RunId.make("run_does_not_exist"), "x"), 404, "run_not_found")
      yield* owner.api.runs.updateRun({ path: { id: run.id }, payload: { status: "running" } })
      yield* owner.api.runs.updateRun({ path: { id: run.id }, payload: { status: "completed" } })
      yield* expectFailure(append(run.id, "late"), 409, "run_ended")
      expect(yield* directCalls(base, APPEND_ROUTE)).toBe(after + 2)
    })
  )
})
