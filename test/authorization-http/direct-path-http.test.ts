/**
 * The direct paths of `POST /v1/events` (src/authorization/DecideDirect.ts)
 * and `POST /v1/runs/{id}/events` (src/runs/AppendDirect.ts): once a runtime
 * key's request has warmed the caches, the next ones are answered without a
 * fiber. A user must not be able to tell the two paths apart: the same
 * decisions, findings, receipts and traces; changes to policies and keys
 * applying at once; one gap-free sequence per run whichever path appended;
 * the same 404 and 409 bodies. `guardrail_http_direct_requests_total`
 * shows which path answered.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { compactVerify, createLocalJWKSet, type JWK } from "jose"
import { call, createKey, expectError, expectStatus, SERVER_OPTIONS, tenant } from "../identity/http-helpers.js"
import { sample, scrape } from "../support/Metrics.js"
import { baseUrl, request, testServer } from "../support/TestServer.js"
import {
  createAgent,
  createPolicy,
  createRun,
  type DecisionBody,
  list,
  propose,
  reply,
  type RunEventBody,
  setPolicyEnabled,
  type TraceBody
} from "./event-helpers.js"

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

/** A decision without what differs from call to call (ids and timing). */
const comparable = (decision: DecisionBody) => {
  const { intent_id: _intent, receipt_id: _receipt, trace_id: _trace, latency_ms: _latency, ...rest } = decision
  return { ...rest, findings: rest.findings.map(({ id: _id, ...finding }) => finding) }
}

/** A run event without its id and times. */
const comparableEvent = (event: RunEventBody) => {
  const { id: _id, created_at: _created, occurred_at: _occurred, sequence: _sequence, ...rest } = event
  return rest
}

/** The receipt's signed content, verified with nothing but the JWKS endpoint's public key. */
const verifiedReceipt = (base: string, token: string, receiptId: string) =>
  Effect.gen(function* () {
    const jwks = expectStatus(yield* request(`${base}/.well-known/jwks.json`), 200) as { keys: Array<JWK> }
    const receipt = expectStatus(
      yield* call(base, "GET", `/v1/receipts/${encodeURIComponent(receiptId)}`, { token }),
      200
    ) as { jws: string }
    const verified = yield* Effect.promise(() => compactVerify(receipt.jws, createLocalJWKSet({ keys: jwks.keys })))
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
      const key = yield* createKey(base, owner)
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
      const traces = (yield* list<TraceBody>(base, owner, "/v1/traces", "traces", { session_id: session })).items
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
        expect(pb.request).toEqual(pa.request)
        expect(comparable(pb.response)).toEqual(comparable(pa.response))
      }
    })
  )

  it.effect("a workspace whose catalog was never changed is decided from memory after its first decision", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const key = yield* createKey(base, owner)
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
      const key = yield* createKey(base, owner)
      const decide = (content: string) => propose(base, owner, AGENT, reply(content), { token: key.plaintext_key })

      expect((yield* decide("A refund now.")).effect).toBe("deny")
      const warm = yield* directCalls(base, DECIDE_ROUTE)
      expect((yield* decide("A refund now.")).effect).toBe("deny")
      expect(yield* directCalls(base, DECIDE_ROUTE)).toBe(warm + 1)

      yield* setPolicyEnabled(base, owner, "no-refund-now", false)
      expect((yield* decide("A refund now.")).effect).toBe("permit")
      yield* createPolicy(base, owner, "no-lawsuit", { value: "lawsuit" })
      expect((yield* decide("No lawsuit, please.")).effect).toBe("deny")

      expectStatus(
        yield* call(base, "PATCH", "/v1/api-keys/batch/revoke", { token: owner.jwt, body: { ids: [key.api_key.id] } }),
        200
      )
      const refused = yield* call(base, "POST", "/v1/events", {
        token: key.plaintext_key,
        body: {
          kind: "output.proposed",
          principal: { agent_id: AGENT, environment_id: owner.defaultEnvironmentId, workspace_id: owner.workspaceId },
          action: reply("hello")
        }
      })
      expectError(refused, 401)
    })
  )

  it.effect("appends on either path share one gap-free sequence; 404 and 409 read the same", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const key = yield* createKey(base, owner)
      const run = yield* createRun(base, owner, { agent_id: AGENT, kind: "chat_session" })
      const append = (runId: string, label: string) =>
        call(base, "POST", `/v1/runs/${encodeURIComponent(runId)}/events`, {
          token: key.plaintext_key,
          body: { kind: "custom", label, metadata: { label } }
        })

      const before = yield* directCalls(base, APPEND_ROUTE)
      const cold = expectStatus(yield* append(run.id, "e"), 201) as RunEventBody
      const warm = yield* Effect.forEach(
        Array.from({ length: 20 }, (_, i) => i),
        () => Effect.map(append(run.id, "e"), (response) => expectStatus(response, 201) as RunEventBody),
        { concurrency: "unbounded" }
      )
      const after = yield* directCalls(base, APPEND_ROUTE)
      expect(after - before).toBeGreaterThanOrEqual(20)
      for (const event of warm) expect(comparableEvent(event)).toEqual(comparableEvent(cold))
      const listed = (yield* list<RunEventBody>(base, owner, `/v1/runs/${run.id}/events`, "events", { limit: 100 }))
        .items
      expect(listed.map((event) => event.sequence)).toEqual(Array.from({ length: 21 }, (_, i) => i + 1))

      // Refusals come from the writer; the direct path answers them with the conventions' body.
      expectError(yield* append("run_does_not_exist", "x"), 404, "run_not_found")
      expectStatus(
        yield* call(base, "PATCH", `/v1/runs/${run.id}`, { token: owner.jwt, body: { status: "running" } }),
        200
      )
      expectStatus(
        yield* call(base, "PATCH", `/v1/runs/${run.id}`, { token: owner.jwt, body: { status: "completed" } }),
        200
      )
      expectError(yield* append(run.id, "late"), 409, "run_ended")
      expect(yield* directCalls(base, APPEND_ROUTE)).toBe(after + 2)
    })
  )
})
