/**
 * The red team end to end on demo://local-agent: a standard job lands attacks
 * in at least five categories; hardening yields candidates that passed replay
 * verification (zero false blocks on controls); once those are enabled, a new
 * standard job lands nothing and its comparison lists every earlier finding as fixed.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { Comparison } from "../../src/redteam/Domain.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import { total } from "../analytics/analytics-helpers.js"
import { DEMO, dispatch, report, waitForJob } from "./redteam-helpers.js"

layer(testServer("database"), SERVER_OPTIONS)("red team on the demo agent", (it) => {
  it.effect("a standard job lands; hardening fixes every finding without false blocks", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)

      const first = yield* dispatch(owner, { profile: "standard", target_url: DEMO })
      expect(first.status).toBe("queued")
      expect(first.agent_id).toBeNull()
      expect(first.environment_id).toBe(owner.defaultEnvironmentId)
      const done = yield* waitForJob(owner, first.id)
      expect(done.job.attacks).toBeGreaterThanOrEqual(90)
      expect(done.job.attacks).toBeLessThanOrEqual(100)
      expect(done.sessions).toHaveLength(done.job.attacks)

      const before = yield* report(owner, first.id)
      const a = before.aggregates
      expect(a.total).toBe(a.landed + a.blocked + a.clean + a.errored)
      expect(a.errored).toBe(0)
      expect(a.landed).toBeGreaterThan(0)
      const landedCategories = new Set(before.findings.filter((f) => f.landed).map((f) => f.category))
      expect(landedCategories.size, [...landedCategories].join(", ")).toBeGreaterThanOrEqual(5)
      expect(before.aggregates.risk_level).toBe("critical")
      expect(before.aggregates.success_rate).toBeCloseTo(a.landed / (a.landed + a.blocked + a.clean), 3)
      // Every reply went through the pipeline: landed findings carry the trace of their decision.
      for (const finding of before.findings.filter((f) => f.landed)) expect(finding.trace_id).toMatch(/^trc_/)
      // Analytics counts each landed attack once (written with the attack record).
      expect(yield* total(base, owner, "redteam_landed")).toBe(a.landed)

      const hardened = yield* owner.api.redteam.hardenJob({ path: { id: first.id }, payload: {} })
      expect(hardened.rejections, JSON.stringify(hardened.rejections)).toEqual([])
      expect(hardened.unreachable).toEqual([])
      expect(hardened.candidates.length).toBeGreaterThan(0)
      const landedSeqs = new Set(before.findings.filter((f) => f.landed).map((f) => f.seq))
      const covered = new Set(hardened.candidates.flatMap((c) => c.evidence_seqs))
      expect([...landedSeqs].every((seq) => covered.has(seq))).toBe(true)
      for (const candidate of hardened.candidates) {
        expect(candidate.verify.passed).toBe(true)
        expect(candidate.verify.blocked_landed).toBe(candidate.verify.landed_total)
        expect(candidate.verify.false_blocks).toBe(0)
        expect(candidate.verify.control_total).toBeGreaterThan(0)
        expect(candidate.verify.blocked_variants).toBeGreaterThanOrEqual(
          Math.ceil(candidate.verify.variant_total * 0.95)
        )
        // Nothing is enabled automatically.
        expect(candidate.policy.enabled).toBe(false)
        expect(candidate.operation).toBe("create")
      }
      expect(hardened.candidates.some((c) => c.verify.variant_total > 0)).toBe(true)

      // Candidates exist only disabled: a job now would still land.
      const ids = hardened.candidates.map((c) => c.policy.id)
      const enabled = yield* owner.api.policies.setPoliciesEnabled({ payload: { ids, enabled: true } })
      expect(enabled.policies.every((p) => p.enabled)).toBe(true)

      const second = yield* dispatch(owner, { profile: "standard", target_url: DEMO })
      yield* waitForJob(owner, second.id)
      const after = yield* report(owner, second.id, first.id)
      expect(after.aggregates.landed).toBe(0)
      expect(after.aggregates.risk_level).toBe("none")
      expect(after.aggregates.blocked).toBe(a.landed)
      expect(after.comparison).not.toBeNull()
      // `comparison` is free-form JSON in the contract: read with its own schema.
      const comparison = Schema.decodeUnknownSync(Comparison)(after.comparison)
      expect(comparison.compare_job_id).toBe(first.id)
      expect(comparison.new).toEqual([])
      expect(comparison.persisting).toEqual([])
      expect(comparison.fixed.map((f) => f.attack).sort()).toEqual(
        before.findings
          .filter((f) => f.landed)
          .map((f) => f.attack)
          .sort()
      )

      // Hardening the same job again reuses the policies instead of duplicating them.
      const again = yield* owner.api.redteam.hardenJob({ path: { id: first.id }, payload: {} })
      expect(again.candidates.map((c) => c.operation).every((op) => op === "reuse")).toBe(true)
    })
  )
})
