/**
 * Red-team report extensions of the review console (issue 21): `risk_score`
 * is a bounded 0-10 rescale of the severity points, hardening results are
 * stored and read back with `GET /v1/redteam/jobs/{id}/hardening`, and
 * `GET /v1/redteam/jobs/{id}/compare?with=` answers new/fixed/persisting.
 */
import { describe, expect, it, layer } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { Comparison, JobId } from "../../src/redteam/Domain.js"
import { riskOf, riskScoreOf, SEVERITY_WEIGHT } from "../../src/redteam/Reports.js"
import { clientAt, expectFailure } from "../support/Api.js"
import { call, expectError, expectValidation } from "../support/Raw.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import { agentYaml, createAgent, DEMO, dispatch, report, waitForJob } from "./redteam-helpers.js"

const findings = (severity: "low" | "medium" | "high" | "critical", count: number) =>
  Array.from({ length: count }, () => ({ severity }))

describe("risk score", () => {
  it("is 0 with nothing landed, grows with points and never leaves 0-10", () => {
    expect(riskOf([])).toEqual({ points: 0, score: 0, level: "none" })
    expect(riskOf(findings("critical", 1))).toEqual({ points: 10, score: 4.9, level: "critical" })
    expect(riskOf(findings("high", 1)).score).toBe(3.7)
    expect(riskOf(findings("low", 1)).score).toBe(0.6)
    expect(riskOf(findings("low", 40))).toMatchObject({ points: 40, level: "critical" })
    const huge = riskOf(findings("critical", 10_000))
    expect(huge.points).toBe(100_000)
    expect(huge.score).toBe(10)
    let previous = -1
    for (let points = 0; points <= 200; points++) {
      const score = riskScoreOf(points)
      expect(score).toBeGreaterThanOrEqual(previous)
      expect(score).toBeGreaterThanOrEqual(0)
      expect(score).toBeLessThanOrEqual(10)
      expect(score).toBeCloseTo(10 * (1 - Math.exp(-points / 15)), 1)
      previous = score
    }
  })
})

layer(testServer("database"), SERVER_OPTIONS)("red-team console reports", (it) => {
  it.effect("a report's risk_score is the rescaled risk_points of its landed findings; the page shows it of 10", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const job = yield* dispatch(owner, { profile: "quick", target_url: DEMO })
      yield* waitForJob(owner, job.id)
      const { aggregates, findings: listed } = yield* report(owner, job.id)
      const landed = listed.filter((finding) => finding.landed)
      expect(aggregates.landed).toBeGreaterThan(0)
      expect(aggregates.risk_points).toBe(landed.reduce((sum, finding) => sum + SEVERITY_WEIGHT[finding.severity], 0))
      expect(aggregates.risk_score).toBe(riskScoreOf(aggregates.risk_points))
      expect(aggregates.risk_score).toBeGreaterThan(0)
      expect(aggregates.risk_score).toBeLessThanOrEqual(10)

      const link = yield* owner.api.redteamReports.createShareLink({ payload: { job_id: job.id } })
      const page = yield* (yield* clientAt(base)).redteamReports.getSharedReportHtml({ path: { token: link.token } })
      // The console's report page (src/dashboard/assets/report-render.js): the score, "of 10".
      expect(page).toContain(`data-risk-score="${aggregates.risk_score}">${aggregates.risk_score}</strong> / 10`)
    })
  )

  it.effect("hardening results are stored: 404 before the first run, then the last result; scoped", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const job = yield* dispatch(owner, { profile: "quick", target_url: DEMO })
      yield* waitForJob(owner, job.id)
      const path = { id: job.id }
      yield* expectFailure(owner.api.redteam.getHardening({ path }), 404, "hardening_not_found")
      const hardened = yield* owner.api.redteam.hardenJob({ path, payload: {} })
      expect(hardened.candidates.length + hardened.rejections.length).toBeGreaterThan(0)
      expect(yield* owner.api.redteam.getHardening({ path })).toEqual(hardened)
      // Hardening again replaces the stored result.
      const again = yield* owner.api.redteam.hardenJob({ path, payload: {} })
      expect((yield* owner.api.redteam.getHardening({ path })).generated_at).toBe(again.generated_at)

      const stranger = yield* tenant(base)
      yield* expectFailure(stranger.api.redteam.getHardening({ path }), 404, "job_not_found")
      yield* expectFailure(
        owner.api.redteam.getHardening({ path: { id: JobId.make("rtj_nope") } }),
        404,
        "job_not_found"
      )
    })
  )

  it.effect("compare?with= answers the report's comparison; another agent's job is 400 naming with", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const a = yield* dispatch(owner, { profile: "quick", target_url: DEMO })
      const b = yield* dispatch(owner, { profile: "quick", target_url: DEMO })
      yield* createAgent(owner, agentYaml("cmp-bot", DEMO))
      const c = yield* dispatch(owner, { profile: "quick", target_url: DEMO, agent_id: "cmp-bot" })
      for (const job of [a, b, c]) yield* waitForJob(owner, job.id)

      const compared = yield* owner.api.redteam.compareJobs({ path: { id: b.id }, urlParams: { with: a.id } })
      const fromReport = Schema.decodeUnknownSync(Comparison)((yield* report(owner, b.id, a.id)).comparison)
      expect(compared).toEqual(fromReport)
      expect(compared.compare_job_id).toBe(a.id)
      expect(compared.new.length + compared.persisting.length).toBe(compared.landed_now)
      expect(compared.fixed.length + compared.persisting.length).toBe(compared.landed_before)

      const token = owner.jwt
      for (const other of [c.id, b.id]) {
        const mismatch = yield* call(base, "GET", `/v1/redteam/jobs/${b.id}/compare?with=${other}`, { token })
        const error = expectError(mismatch, 400, "compare_job_mismatch")
        expect(error.details?.map((detail) => detail.path)).toEqual(["with"])
      }
      expectValidation(yield* call(base, "GET", `/v1/redteam/jobs/${b.id}/compare`, { token }), "with")
      const stranger = yield* tenant(base)
      yield* expectFailure(
        stranger.api.redteam.compareJobs({ path: { id: b.id }, urlParams: { with: a.id } }),
        404,
        "job_not_found"
      )
    })
  )
})
