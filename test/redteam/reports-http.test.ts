/**
 * Reports and share links over HTTP: minting, reading without credentials,
 * workspace scoping, revocation, expiry bounds, the HTML page, a target
 * URL's path and query kept out of shared reports; plans and static policies.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { AgentId } from "../../src/catalog/Domain.js"
import { Comparison, ShareToken } from "../../src/redteam/Domain.js"
import { clientAt, expectFailure, jsonAt } from "../support/Api.js"
import { call, expectValidation } from "../support/Raw.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import {
  agentYaml,
  createAgent,
  DEMO,
  demoAnswer,
  dispatch,
  getJob,
  report,
  stubTarget,
  waitForJob
} from "./redteam-helpers.js"

/** A report's `comparison` (free-form JSON in the contract) read with its own schema. */
const comparisonOf = (report: { readonly comparison: unknown }) =>
  Schema.decodeUnknownSync(Schema.NullOr(Comparison))(report.comparison)

const server = testServer("database", { HTTP_URL_ALLOWLIST: "127.0.0.1" })

layer(server, SERVER_OPTIONS)("red-team reports, share links and plans", (it) => {
  it.effect("share links: minted, read without credentials, scoped to the minting workspace, revoked -> 404", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const stranger = yield* tenant(base)
      const anonymous = yield* clientAt(base)
      const job = yield* dispatch(owner, { profile: "quick", target_url: DEMO })
      yield* waitForJob(owner, job.id)
      const own = yield* report(owner, job.id)

      // A job of another workspace cannot be shared or reported.
      yield* expectFailure(
        stranger.api.redteamReports.createShareLink({ payload: { job_id: job.id } }),
        404,
        "job_not_found"
      )
      yield* expectFailure(report(stranger, job.id), 404, "job_not_found")
      // Bodies outside the contract (a lifetime over 90 days, no job) are sent raw.
      expectValidation(
        yield* call(base, "POST", "/v1/redteam/reports", {
          token: owner.jwt,
          body: { job_id: job.id, expires_in_days: 91 }
        }),
        "expires_in_days"
      )
      expectValidation(yield* call(base, "POST", "/v1/redteam/reports", { token: owner.jwt, body: {} }), "job_id")
      yield* expectFailure(anonymous.redteamReports.createShareLink({ payload: { job_id: job.id } }), 401)

      const link = yield* owner.api.redteamReports.createShareLink({ payload: { job_id: job.id } })
      expect(link.token).toMatch(/^rtr_[A-Za-z0-9_-]{43}$/)
      expect(link.path).toBe(`/v1/redteam/reports/${link.token}`)
      expect(link.html_path).toBe(`/r/${link.token}`)
      const days = (Date.parse(link.expires_at) - Date.parse(link.created_at)) / 86_400_000
      expect(days).toBeCloseTo(7, 2)
      const long = yield* owner.api.redteamReports.createShareLink({
        payload: { job_id: job.id, expires_in_days: 90 }
      })
      expect((Date.parse(long.expires_at) - Date.parse(long.created_at)) / 86_400_000).toBeCloseTo(90, 2)

      // No credential needed; a stranger's credential does not change whose report it is.
      // (`link.path` is the shared-report endpoint of `link.token`, as checked above.)
      const shared = yield* anonymous.redteamReports.getSharedReport({ path: { token: link.token } })
      expect(shared.job.id).toBe(job.id)
      expect(shared.job.workspace_id).toBe(owner.workspaceId)
      expect(shared.aggregates).toEqual(own.aggregates)
      const viaStranger = yield* stranger.api.redteamReports.getSharedReport({ path: { token: link.token } })
      expect(viaStranger.job.workspace_id).toBe(owner.workspaceId)

      // The HTML page, escaped, beside the API (`link.html_path` is /r/{token}, as checked above).
      const [page, pageResponse] = yield* anonymous.redteamReports.getSharedReportHtml({
        path: { token: link.token },
        withResponse: true
      })
      expect(pageResponse.status).toBe(200)
      expect(pageResponse.headers["content-type"]).toMatch(/text\/html/)
      expect(page).toContain("Red-team report")
      expect(page).toContain(job.id)
      expect(page).not.toMatch(/<script/i)
      // It shows what the target replied: no script may run there, nothing may frame it, no cache keeps it
      // past a revoke, and the capability in its address is not sent on as a referrer.
      const csp = String(pageResponse.headers["content-security-policy"])
      expect(csp).toContain("script-src 'none'")
      expect(csp).toContain("frame-ancestors 'none'")
      expect(csp).toContain("style-src 'self'")
      expect(pageResponse.headers["x-content-type-options"]).toBe("nosniff")
      expect(pageResponse.headers["referrer-policy"]).toBe("no-referrer")
      expect(pageResponse.headers["cache-control"]).toBe("no-store")
      expect(pageResponse.headers["content-type"]).toBe("text/html; charset=utf-8")

      // Tokens are stored hashed: a made-up token is 404, as is another workspace revoking it.
      yield* expectFailure(
        anonymous.redteamReports.getSharedReport({ path: { token: ShareToken.make(`rtr_${"x".repeat(43)}`) } }),
        404,
        "share_link_not_found"
      )
      yield* expectFailure(
        stranger.api.redteamReports.revokeShareLink({ path: { token: link.token } }),
        404,
        "share_link_not_found"
      )
      // The typed call succeeds only with the contract's 204.
      yield* owner.api.redteamReports.revokeShareLink({ path: { token: link.token } })
      yield* expectFailure(
        anonymous.redteamReports.getSharedReport({ path: { token: link.token } }),
        404,
        "share_link_not_found"
      )
      yield* expectFailure(anonymous.redteamReports.getSharedReportHtml({ path: { token: link.token } }), 404)
      yield* expectFailure(owner.api.redteamReports.revokeShareLink({ path: { token: link.token } }), 404)
      // The other link still works.
      yield* anonymous.redteamReports.getSharedReport({ path: { token: long.token } })
    })
  )

  it.effect("a shared report shows the target's origin only: a token in its path or query stays private", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const anonymous = yield* clientAt(base)
        const target = yield* stubTarget((_path, body) => ({ status: 200, body: demoAnswer(body) }))
        const secretUrl = `${target.url}/hooks/T0-hook-secret/chat?api_key=sk-live-query-secret`
        yield* createAgent(owner, agentYaml("share-bot", secretUrl))
        const job = yield* dispatch(owner, { profile: "quick", target_url: secretUrl, agent_id: "share-bot" })
        yield* waitForJob(owner, job.id)
        // Members see the whole URL.
        expect((yield* getJob(owner, job.id)).job.target).toBe(secretUrl)
        const link = yield* owner.api.redteamReports.createShareLink({ payload: { job_id: job.id } })
        const shared = yield* anonymous.redteamReports.getSharedReport({ path: { token: link.token } })
        expect(shared.job.target).toBe(`${target.url}/…`)
        const page = yield* anonymous.redteamReports.getSharedReportHtml({ path: { token: link.token } })
        expect(page).toContain(job.id)
        for (const secret of ["hook-secret", "sk-live-query-secret", "api_key"]) {
          expect(JSON.stringify(shared)).not.toContain(secret)
          expect(page).not.toContain(secret)
        }
      })
    )
  )

  it.effect("report comparison needs another job of the same agent; shared comparisons carry it", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const a = yield* dispatch(owner, { profile: "quick", target_url: DEMO })
      const b = yield* dispatch(owner, { profile: "quick", target_url: DEMO })
      yield* createAgent(owner, agentYaml("cmp-bot", DEMO))
      const c = yield* dispatch(owner, { profile: "quick", target_url: DEMO, agent_id: "cmp-bot" })
      yield* waitForJob(owner, a.id)
      yield* waitForJob(owner, b.id)
      yield* waitForJob(owner, c.id)
      const same = yield* report(owner, b.id, a.id)
      const comparison = comparisonOf(same)
      expect(comparison!.new).toEqual([])
      expect(comparison!.fixed).toEqual([])
      expect(comparison!.persisting.length).toBe(same.aggregates.landed)
      yield* expectFailure(report(owner, b.id, c.id), 400, "compare_job_mismatch")
      yield* expectFailure(report(owner, b.id, b.id), 400, "compare_job_mismatch")
      yield* expectFailure(report(owner, "rtj_nope"), 404, "job_not_found")
      const link = yield* owner.api.redteamReports.createShareLink({
        payload: { job_id: b.id, compare_job_id: a.id }
      })
      expect(link.compare_job_id).toBe(a.id)
      const shared = yield* (yield* clientAt(base)).redteamReports.getSharedReport({ path: { token: link.token } })
      expect(comparisonOf(shared)!.compare_job_id).toBe(a.id)
    })
  )

  it.effect("plans: classified paths, vectors, unmapped node types; saved by name, listed, deleted", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      yield* createAgent(
        owner,
        agentYaml(
          "plan-bot",
          DEMO,
          `workflow_definition:
  nodes:
    - { id: chat, type: user_input }
    - { id: kb, type: retrieval }
    - { id: brain, type: llm }
    - { id: refund, type: tool, tool: issue_refund, params: [{ path: amount, role: authority_bearing }] }
    - { id: mailer, type: tool, tool: send_email }
    - { id: out, type: reply }
    - { id: odd, type: quantum_oracle }
  edges:
    - { from: chat, to: brain }
    - { from: kb, to: brain }
    - { from: brain, to: refund }
    - { from: brain, to: mailer }
    - { from: brain, to: out }
`
        )
      )
      const planBot = { id: AgentId.make("plan-bot") }
      const plan = yield* owner.api.redteam.createPlan({ path: planBot, payload: { name: "baseline" } })
      expect(plan.name).toBe("baseline")
      expect(plan.agent_id).toBe("plan-bot")
      expect(plan.unmapped_node_types).toEqual(["quantum_oracle"])
      const pairs = plan.paths.map((p) => `${p.source_category}->${p.sink_category}:${p.sink_node}`).sort()
      expect(pairs).toEqual(
        [
          "retrieval->authority_param:issue_refund",
          "retrieval->outbound_message:out",
          "retrieval->side_effecting_tool:send_email",
          "user_input->authority_param:issue_refund",
          "user_input->outbound_message:out",
          "user_input->side_effecting_tool:send_email"
        ].sort()
      )
      const techniques = new Set(plan.vectors.map((v) => v.technique))
      for (const t of [
        "direct_injection",
        "indirect_injection",
        "tool_parameter_injection",
        "authority_escalation",
        "system_prompt_extraction"
      ]) {
        expect(techniques.has(t), t).toBe(true)
      }
      expect(
        plan.vectors.some((v) => v.target_operation === "send_email" && jsonAt(v.source_path, "source_node") === "kb")
      ).toBe(true)

      const unnamed = yield* owner.api.redteam.createPlan({ path: planBot, payload: {} })
      expect(unnamed.name).toMatch(/^plan-bot plan /)
      const listed = yield* owner.api.redteam.listPlans({ path: planBot })
      expect(listed.plans.map((p) => p.id)).toEqual([unnamed.id, plan.id])
      const ghost = { id: AgentId.make("ghost") }
      yield* expectFailure(owner.api.redteam.createPlan({ path: ghost, payload: {} }), 404, "agent_not_found")
      const stranger = yield* tenant(base)
      yield* expectFailure(stranger.api.redteam.deletePlan({ path: { id: plan.id } }), 404, "plan_not_found")
      // The typed call succeeds only with the contract's 204.
      yield* owner.api.redteam.deletePlan({ path: { id: plan.id } })
      yield* expectFailure(owner.api.redteam.deletePlan({ path: { id: plan.id } }), 404, "plan_not_found")
      const after = yield* owner.api.redteam.listPlans({ path: planBot })
      expect(after.plans.map((p) => p.id)).toEqual([unnamed.id])

      // Static policies: red-team oriented, owned by the agent, disabled; generating twice does not duplicate.
      const generated = yield* owner.api.redteam.generateStaticPolicies({ path: planBot })
      expect(generated.generated.length).toBeGreaterThanOrEqual(6)
      expect(generated.generated.every((p) => p.enabled === false && p.owner_agent_id === "plan-bot")).toBe(true)
      expect(generated.generated.some((p) => p.id.endsWith(".review-issue_refund"))).toBe(true)
      const again = yield* owner.api.redteam.generateStaticPolicies({ path: planBot })
      expect(again.generated.map((p) => p.id)).toEqual(generated.generated.map((p) => p.id))
      const policies = yield* owner.api.policies.listPolicies()
      expect(policies.policies.filter((p) => p.id.startsWith("redteam-static.plan-bot.")).length).toBe(
        generated.generated.length
      )
      yield* expectFailure(owner.api.redteam.generateStaticPolicies({ path: ghost }), 404)
    })
  )

  it.effect(
    "policy ids are distinct per agent and per candidate: agent ids differing in case, or 128 characters long",
    () =>
      Effect.gen(function* () {
        const owner = yield* tenant(yield* baseUrl)
        // Static policies: agents whose ids differ only in case each get their own, never the other's.
        for (const id of ["Case-Bot", "case-bot"]) yield* createAgent(owner, agentYaml(id, DEMO))
        const upper = yield* owner.api.redteam.generateStaticPolicies({ path: { id: AgentId.make("Case-Bot") } })
        const lower = yield* owner.api.redteam.generateStaticPolicies({ path: { id: AgentId.make("case-bot") } })
        expect(upper.generated.every((p) => p.owner_agent_id === "Case-Bot")).toBe(true)
        expect(lower.generated.every((p) => p.owner_agent_id === "case-bot")).toBe(true)
        const upperIds = new Set(upper.generated.map((p) => p.id))
        expect(lower.generated.some((p) => upperIds.has(p.id))).toBe(false)

        // Hardening: an agent id of 128 characters still gives each candidate its own policy.
        const longId = `long-${"x".repeat(123)}`
        yield* createAgent(owner, agentYaml(longId, DEMO))
        const job = yield* dispatch(owner, { profile: "quick", target_url: DEMO, agent_id: longId })
        yield* waitForJob(owner, job.id)
        const hardened = yield* owner.api.redteam.hardenJob({ path: { id: job.id }, payload: {} })
        expect(hardened.candidates.length).toBeGreaterThan(1)
        expect(new Set(hardened.candidates.map((c) => c.policy.id)).size).toBe(hardened.candidates.length)
        expect(hardened.candidates.every((c) => c.operation === "create" && c.policy.id.length <= 128)).toBe(true)
      })
  )
})
