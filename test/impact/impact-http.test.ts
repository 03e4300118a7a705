/**
 * Impact replay over HTTP against the real service, PostgreSQL and the
 * stream worker: the transition matrix with example traces, affected agents,
 * agreement with human review, landed red-team attacks the candidate blocks,
 * the same replay twice giving the same result_digest, decisions kept as
 * metadata only being skipped, a metadata_only workspace answering 409, and
 * the request's validation.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { expectFailure, expectInvalid } from "../support/Api.js"
import { createAgent, createPolicy, policyDocument, propose, reply } from "../support/Events.js"
import { call, expectValidation } from "../support/Raw.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import { DEMO, dispatch, waitForJob } from "../redteam/redteam-helpers.js"
import { aroundNow, getImpact, replay, startImpact, waitForImpact } from "./impact-helpers.js"

const HEX64 = /^[0-9a-f]{64}$/

layer(testServer("database"), SERVER_OPTIONS)("impact replay over HTTP", (it) => {
  describe("POST and GET /v1/policies/impact", () => {
    it.effect("replays retained decisions: transitions, examples, agents, review agreement, same digest twice", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        yield* createAgent(base, owner, "bot-a")
        yield* createAgent(base, owner, "bot-b")
        yield* createPolicy(base, owner, "no-refund", { value: "refund" })
        const refund1 = yield* propose(base, owner, "bot-a", reply("You get a refund."))
        const refund2 = yield* propose(base, owner, "bot-a", reply("A refund is on its way."))
        const voucherA = yield* propose(base, owner, "bot-a", reply("Here is a voucher."))
        const hello = yield* propose(base, owner, "bot-a", reply("Hello there."))
        const voucherB = yield* propose(base, owner, "bot-b", reply("A voucher for you."))
        expect([refund1, refund2, voucherA, hello, voucherB].map((d) => d.effect)).toEqual([
          "deny",
          "deny",
          "permit",
          "permit",
          "permit"
        ])
        // A reviewer found the refund deny wrong, and the voucher permit a miss.
        yield* owner.api.reviewEvents.createReviewEvent({
          path: { trace_id: refund1.trace_id },
          payload: { outcome: "false_positive" }
        })
        yield* owner.api.reviewEvents.createReviewEvent({
          path: { trace_id: voucherA.trace_id },
          payload: { outcome: "missed_issue" }
        })

        const body = {
          candidate_policies: [policyDocument("no-voucher", { value: "voucher" })],
          disable_ids: ["no-refund"],
          ...aroundNow()
        }
        const started = yield* startImpact(owner, body)
        expect(started).toMatchObject({ status: "queued", result: null, result_digest: null, disable_ids: ["no-refund"] })
        expect(started.id).toMatch(/^imp_/)
        const done = yield* waitForImpact(owner, started.id)
        expect(done.progress).toEqual({ replayed: 5, total: 5 })
        expect(done.result_digest).toMatch(HEX64)
        expect(done.finished_at).not.toBeNull()
        expect(done.result).toEqual({
          decisions_replayed: 5,
          skipped: 0,
          changed: 4,
          recorded_mismatches: 0,
          transitions: [
            { from: "permit", to: "permit", count: 1, example_trace_ids: [hello.trace_id] },
            { from: "permit", to: "deny", count: 2, example_trace_ids: [voucherA.trace_id, voucherB.trace_id] },
            { from: "deny", to: "permit", count: 2, example_trace_ids: [refund1.trace_id, refund2.trace_id] }
          ],
          affected_agents: [
            { agent_id: "bot-a", changed: 3 },
            { agent_id: "bot-b", changed: 1 }
          ],
          human_review: {
            false_positive: { reviewed: 1, now_permitted: 1, example_trace_ids: [refund1.trace_id] },
            missed_issue: { reviewed: 1, now_caught: 1, example_trace_ids: [voucherA.trace_id] }
          },
          redteam: { landed: 0, would_block: 0, attacks: [] }
        })

        // The same replay again: another job, the same result and digest.
        const again = yield* replay(owner, body)
        expect(again.id).not.toBe(done.id)
        expect(again.result).toEqual(done.result)
        expect(again.result_digest).toBe(done.result_digest)

        // One agent only; a candidate that changes nothing.
        const onlyB = yield* replay(owner, { ...body, agent_id: "bot-b" })
        expect(onlyB.result?.decisions_replayed).toBe(1)
        expect(onlyB.result?.affected_agents).toEqual([{ agent_id: "bot-b", changed: 1 }])
        const same = yield* replay(owner, aroundNow())
        expect(same.result?.changed).toBe(0)
        expect(same.result?.transitions.map((t) => [t.from, t.to, t.count])).toEqual([
          ["permit", "permit", 3],
          ["deny", "deny", 2]
        ])
        expect(same.result_digest).not.toBe(done.result_digest)

        // Another workspace sees none of it.
        const stranger = yield* tenant(base)
        yield* expectFailure(getImpact(stranger, done.id), 404, "impact_job_not_found")
        const empty = yield* replay(stranger, body)
        expect(empty.result?.decisions_replayed).toBe(0)
      })
    )

    it.effect("enable_ids replays a stored disabled policy as enabled", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        yield* createAgent(base, owner, "bot")
        yield* createPolicy(base, owner, "no-coupon", { value: "coupon", enabled: false })
        const coupon = yield* propose(base, owner, "bot", reply("Take this coupon."))
        expect(coupon.effect).toBe("permit")
        const done = yield* replay(owner, { enable_ids: ["no-coupon"], ...aroundNow() })
        expect(done.enable_ids).toEqual(["no-coupon"])
        expect(done.result?.transitions).toEqual([
          { from: "permit", to: "deny", count: 1, example_trace_ids: [coupon.trace_id] }
        ])
      })
    )

    it.effect("decisions kept as metadata only are skipped; a metadata_only workspace gets 409", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        yield* createAgent(base, owner, "bot")
        yield* owner.api.settings.updateSettings({ payload: { data_handling_mode: "metadata_only" } })
        yield* propose(base, owner, "bot", reply("kept as a digest"))
        const refused = yield* expectFailure(startImpact(owner, aroundNow()), 409, "replay_unavailable")
        expect(refused.message).toContain("metadata_only")
        yield* owner.api.settings.updateSettings({ payload: { data_handling_mode: "redacted" } })
        const kept = yield* propose(base, owner, "bot", reply("write to jane@example.com"))
        const done = yield* replay(owner, {
          candidate_policies: [policyDocument("no-write", { value: "write to" })],
          ...aroundNow()
        })
        expect(done.progress).toEqual({ replayed: 2, total: 2 })
        expect(done.result).toMatchObject({ decisions_replayed: 1, skipped: 1, changed: 1 })
        expect(done.result?.transitions[0]?.example_trace_ids).toEqual([kept.trace_id])
      })
    )

    it.effect("landed red-team attacks the candidate would block", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const start = new Date(Date.now() - 1_000).toISOString()
        const window = () => ({ start, end: new Date(Date.now() + 60_000).toISOString() })
        const job = yield* dispatch(owner, { profile: "quick", target_url: DEMO })
        yield* waitForJob(owner, job.id)
        const { records } = yield* owner.api.redteam.listAttacks({
          urlParams: { outcome: "landed", job_id: job.id, limit: 100 }
        })
        const landed = records.filter((record) => record.trace_id !== null)
        expect(landed.length).toBeGreaterThan(0)
        // A candidate that denies every reply blocks every landed attack.
        const blockAll = policyDocument("deny-all-replies", { type: "regex", value: "[\\s\\S]" })
        const done = yield* replay(owner, { candidate_policies: [blockAll], ...window() })
        expect(done.result?.redteam.landed).toBe(landed.length)
        expect(done.result?.redteam.would_block).toBe(landed.length)
        expect(done.result?.redteam.attacks.map((attack) => attack.trace_id).sort()).toEqual(
          landed.map((record) => record.trace_id).sort()
        )
        // Without a candidate nothing changes, so nothing is blocked.
        const none = yield* replay(owner, window())
        expect(none.result?.redteam).toMatchObject({ landed: landed.length, would_block: 0, attacks: [] })
      })
    )

    it.effect("refuses bad requests: window, candidates, enable_ids, ids", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const { end, start } = aroundNow()
        yield* expectInvalid(startImpact(owner, { start: end, end: start }), "end")
        // What the typed client would refuse to send, sent raw.
        const raw = (body: unknown) => call(base, "POST", "/v1/policies/impact", { token: owner.jwt, body })
        expectValidation(yield* raw({ start: "yesterday", end }), "start")
        expectValidation(yield* raw({ start, end, enable_ids: Array.from({ length: 1001 }, () => "p") }), "enable_ids")
        yield* expectInvalid(
          startImpact(owner, { candidate_policies: ["id: broken\nfamily: nope\n"], start, end }),
          "candidate_policies.0.family"
        )
        yield* expectFailure(startImpact(owner, { enable_ids: ["nobody"], start, end }), 404, "policy_not_found")
        yield* createPolicy(base, owner, "off", { value: "x", enabled: false })
        yield* expectInvalid(
          startImpact(owner, { enable_ids: ["off"], disable_ids: ["off"], start, end }),
          "enable_ids.0"
        )
        yield* expectFailure(getImpact(owner, "imp_missing"), 404, "impact_job_not_found")
      })
    )
  })
})
