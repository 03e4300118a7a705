/**
 * `POST /v1/events/evaluate` (dry run) against the real service and
 * PostgreSQL: the same decision as POST /v1/events over the live set with
 * candidate policies added or replacing, and live policies disabled; nothing
 * written (no trace, no receipt); invalid candidates 400 with their path.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { expectFailure, expectInvalid, keysOf, withRaw } from "../support/Api.js"
import {
  createAgent,
  createPolicy,
  DECISION_KEYS,
  eventBody,
  policyDocument,
  propose,
  reply
} from "../support/Events.js"
import { call } from "../support/Raw.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"

const AGENT = "dry-run-bot"

layer(testServer("database"), SERVER_OPTIONS)("dry run over HTTP", (it) => {
  describe("POST /v1/events/evaluate", () => {
    it.effect(
      "a candidate denies what the live set permits, disable_policy_ids permits what it denies; nothing is written",
      () =>
        Effect.gen(function* () {
          const base = yield* baseUrl
          const owner = yield* tenant(base)
          yield* createAgent(base, owner, AGENT)
          const live = yield* createPolicy(base, owner, "no-voucher", { value: "gift voucher" })
          expect((yield* propose(base, owner, AGENT, reply("Take this gift voucher."))).effect).toBe("deny")
          expect((yield* propose(base, owner, AGENT, reply("Take this coupon."))).effect).toBe("permit")
          const before = (yield* owner.api.traces.listTraces({ urlParams: {} })).traces.map((trace) => trace.trace_id)
          expect(before).toHaveLength(2)

          const coupon = eventBody(owner, AGENT, reply("Take this coupon."))
          const candidate = policyDocument("no-coupon", { value: "coupon" })
          const { body, value: denied } = yield* withRaw(
            owner.api.events.evaluateEvent({
              payload: { ...coupon, candidate_policies: [candidate] },
              withResponse: true
            })
          )
          // The dry run adds the digest of the set it evaluated (test/policysets).
          expect(keysOf(body)).toEqual([...DECISION_KEYS, "policy_set_digest"].sort())
          expect(denied.effect).toBe("deny")
          expect(denied.findings.map((finding) => finding.policy_id)).toEqual(["no-coupon"])
          // A candidate is not stored: its finding names no version.
          expect(denied.findings[0]?.policy_version).toBeUndefined()

          const voucher = eventBody(owner, AGENT, reply("Take this gift voucher."))
          const same = yield* owner.api.events.evaluateEvent({ payload: voucher })
          expect(same.effect).toBe("deny")
          expect(same.findings[0]).toMatchObject({ policy_id: live.id, policy_version: 1 })
          const permitted = yield* owner.api.events.evaluateEvent({
            payload: { ...voucher, disable_policy_ids: [live.id] }
          })
          expect(permitted.effect).toBe("permit")
          expect(permitted.findings).toEqual([])

          // A candidate with a live policy's id replaces it, evaluated as enabled even when it says otherwise.
          const replacing = policyDocument(live.id, { value: "coupon", enabled: false })
          const replaced = yield* owner.api.events.evaluateEvent({
            payload: { ...voucher, candidate_policies: [replacing] }
          })
          expect(replaced.effect).toBe("permit")
          const replacedCoupon = yield* owner.api.events.evaluateEvent({
            payload: { ...coupon, candidate_policies: [replacing] }
          })
          expect(replacedCoupon.effect).toBe("deny")

          const after = (yield* owner.api.traces.listTraces({ urlParams: {} })).traces.map((trace) => trace.trace_id)
          expect(after).toEqual(before)
          yield* expectFailure(owner.api.receipts.getReceipt({ path: { id: denied.receipt_id } }), 404)
          // The live set is unchanged.
          expect((yield* propose(base, owner, AGENT, reply("Take this coupon."))).effect).toBe("permit")
        })
    )

    it.effect("an invalid candidate is 400 naming candidate_policies.N and the document's path", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const event = eventBody(owner, AGENT, reply("hello"))
        const bad = policyDocument("bad-type", { value: "x" }).replace("type: literal", "type: glob")
        const error = yield* expectInvalid(
          owner.api.events.evaluateEvent({
            payload: { ...event, candidate_policies: [policyDocument("fine", { value: "x" }), bad] }
          }),
          "candidate_policies.1.match.type"
        )
        expect(error.message).toContain("candidate_policies.1.match.type")
        yield* expectInvalid(
          owner.api.events.evaluateEvent({ payload: { ...event, candidate_policies: ["id: [unclosed"] } }),
          "candidate_policies.0"
        )
        const twice = policyDocument("twice", { value: "x" })
        yield* expectInvalid(
          owner.api.events.evaluateEvent({ payload: { ...event, candidate_policies: [twice, twice] } }),
          "candidate_policies.1.id"
        )
        // Bounds: at most 50 candidates.
        const many = yield* call(base, "POST", "/v1/events/evaluate", {
          token: owner.jwt,
          body: { ...event, candidate_policies: Array.from({ length: 51 }, () => twice) }
        })
        expect(many.status, many.text).toBe(400)
        // The event's own rules are POST /v1/events's: another workspace is 404.
        yield* expectFailure(
          owner.api.events.evaluateEvent({
            payload: { ...event, principal: { ...event.principal, workspace_id: "ws_other" } }
          }),
          404
        )
      })
    )
  })
})
