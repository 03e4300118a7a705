/**
 * `POST /v1/events` end to end with the Kafka event log: decisions (permit,
 * deny, escalated defer, rewrite) with their traces and verifiable receipts,
 * a policy enabled through the API applying at once, and the decisions ->
 * run counters path through the Kafka `decisions` topic.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { compactVerify, createLocalJWKSet } from "jose"
import { runCountersScenario } from "../runs/counters-scenario.js"
import { clientAt } from "../support/Api.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import { reasonsOf, setPolicyEnabled } from "./event-helpers.js"
import { createAgent, createPolicy, propose, reply } from "../support/Events.js"
import { until } from "../support/Eventually.js"

const AGENT = "support-bot"

layer(testServer("kafka"), SERVER_OPTIONS)("POST /v1/events (Kafka event log)", (it) => {
  it.effect("decisions end to end: effects, traces, receipts and a policy enabled through the API", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      yield* createAgent(base, owner, AGENT)
      yield* createPolicy(base, owner, "mask-darn", { action: "rewrite", value: "darn", rewrite: "[bleep]" })
      yield* createPolicy(base, owner, "no-coupons", { value: "coupon", enabled: false })

      const permit = yield* propose(base, owner, AGENT, reply("Your order ships tomorrow."), { session_id: "k-1" })
      expect(permit.effect).toBe("permit")
      expect(permit.findings).toEqual([])
      const deny = yield* propose(base, owner, AGENT, reply("I promise a full refund."), { session_id: "k-1" })
      expect(deny.effect).toBe("deny")
      const escalated = yield* propose(base, owner, AGENT, reply("Talk to a lawyer."), { session_id: "k-1" })
      expect([escalated.effect, escalated.status]).toEqual(["defer", "escalated"])
      const rewrite = yield* propose(base, owner, AGENT, reply("darn, that is stupid"), { session_id: "k-1" })
      expect(rewrite.effect).toBe("rewrite")
      expect(rewrite.transformed_value).toBe("[bleep], that is [removed]")

      expect((yield* propose(base, owner, AGENT, reply("a coupon"))).effect).toBe("permit")
      yield* setPolicyEnabled(base, owner, "no-coupons", true)
      yield* until(
        Effect.map(propose(base, owner, AGENT, reply("a coupon")), (decision) => {
          expect(decision.effect).toBe("deny")
          expect(reasonsOf(decision)).toEqual(["no-coupons"])
        }),
        "30 seconds"
      )

      const { traces } = yield* owner.api.traces.listTraces({ urlParams: { session_id: "k-1" } })
      expect(traces.map((trace) => [trace.trace_id, trace.decision])).toEqual(
        [rewrite, escalated, deny, permit].map((decision) => [decision.trace_id, decision.effect])
      )

      const jwks = yield* (yield* clientAt(base)).receipts.jwks()
      for (const decision of [permit, deny, escalated, rewrite]) {
        const receipt = yield* owner.api.receipts.getReceipt({ path: { id: decision.receipt_id } })
        const verified = yield* Effect.promise(() =>
          compactVerify(receipt.jws, createLocalJWKSet({ keys: [...jwks.keys] }))
        )
        const content = JSON.parse(new TextDecoder().decode(verified.payload)) as Record<string, unknown>
        expect(content).toMatchObject({
          effect: decision.effect,
          trace_id: decision.trace_id,
          intent_id: decision.intent_id
        })
      }
    })
  )

  it.effect("deny, rewrite and escalation decisions with run_id reach the run's counters through Kafka", () =>
    Effect.gen(function* () {
      yield* runCountersScenario(yield* baseUrl)
    })
  )
})
