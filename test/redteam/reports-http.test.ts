/**
 * Reports and share links over HTTP: minting, reading without credentials,
 * workspace scoping, revocation, expiry bounds, the HTML page; plans and
 * static policies.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { call, expectError, expectStatus, expectValidation, SERVER_OPTIONS, tenant } from "../identity/http-helpers.js"
import { request } from "../support/TestServer.js"
import { baseUrl, testServer } from "../support/TestServer.js"
import { agentYaml, createAgent, DEMO, dispatch, report, waitForJob } from "./redteam-helpers.js"

layer(testServer("database"), SERVER_OPTIONS)("red-team reports, share links and plans", (it) => {
  it.effect("share links: minted, read without credentials, scoped to the minting workspace, revoked -> 404", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const stranger = yield* tenant(base)
      const job = yield* dispatch(base, owner, { profile: "quick", target_url: DEMO })
      yield* waitForJob(base, owner, job.id)
      const own = yield* report(base, owner, job.id)

      // A job of another workspace cannot be shared or reported.
      expectError(
        yield* call(base, "POST", "/v1/redteam/reports", { token: stranger.jwt, body: { job_id: job.id } }),
        404,
        "job_not_found"
      )
      expectError(yield* call(base, "GET", `/v1/redteam/jobs/${job.id}/report`, { token: stranger.jwt }), 404, "job_not_found")
      expectValidation(
        yield* call(base, "POST", "/v1/redteam/reports", { token: owner.jwt, body: { job_id: job.id, expires_in_days: 91 } }),
        "expires_in_days"
      )
      expectValidation(yield* call(base, "POST", "/v1/redteam/reports", { token: owner.jwt, body: {} }), "job_id")
      expectError(yield* call(base, "POST", "/v1/redteam/reports", { body: { job_id: job.id } }), 401)

      const link = expectStatus(
        yield* call(base, "POST", "/v1/redteam/reports", { token: owner.jwt, body: { job_id: job.id } }),
        201
      )
      expect(link.token).toMatch(/^rtr_[A-Za-z0-9_-]{43}$/)
      expect(link.path).toBe(`/v1/redteam/reports/${link.token}`)
      expect(link.html_path).toBe(`/r/${link.token}`)
      const days = (Date.parse(link.expires_at) - Date.parse(link.created_at)) / 86_400_000
      expect(days).toBeCloseTo(7, 2)
      const long = expectStatus(
        yield* call(base, "POST", "/v1/redteam/reports", { token: owner.jwt, body: { job_id: job.id, expires_in_days: 90 } }),
        201
      )
      expect((Date.parse(long.expires_at) - Date.parse(long.created_at)) / 86_400_000).toBeCloseTo(90, 2)

      // No credential needed; a stranger's credential does not change whose report it is.
      const shared = expectStatus(yield* call(base, "GET", link.path), 200)
      expect(shared.job.id).toBe(job.id)
      expect(shared.job.workspace_id).toBe(owner.workspaceId)
      expect(shared.aggregates).toEqual(own.aggregates)
      const viaStranger = expectStatus(yield* call(base, "GET", link.path, { token: stranger.jwt }), 200)
      expect(viaStranger.job.workspace_id).toBe(owner.workspaceId)

      // The HTML page, escaped, beside the API.
      const page = yield* request(`${base}${link.html_path}`)
      expect(page.status).toBe(200)
      expect(page.headers.get("content-type")).toMatch(/text\/html/)
      expect(page.text).toContain("Red-team report")
      expect(page.text).toContain(job.id)
      expect(page.text).not.toMatch(/<script/i)

      // Tokens are stored hashed: a made-up token is 404, as is another workspace revoking it.
      expectError(yield* call(base, "GET", `/v1/redteam/reports/rtr_${"x".repeat(43)}`), 404, "share_link_not_found")
      expectError(
        yield* call(base, "POST", `/v1/redteam/reports/${link.token}/revoke`, { token: stranger.jwt }),
        404,
        "share_link_not_found"
      )
      expect((yield* call(base, "POST", `/v1/redteam/reports/${link.token}/revoke`, { token: owner.jwt })).status).toBe(204)
      expectError(yield* call(base, "GET", link.path), 404, "share_link_not_found")
      expect((yield* request(`${base}${link.html_path}`)).status).toBe(404)
      expectError(yield* call(base, "POST", `/v1/redteam/reports/${link.token}/revoke`, { token: owner.jwt }), 404)
      // The other link still works.
      expect((yield* call(base, "GET", long.path)).status).toBe(200)
    })
  )

  it.effect("report comparison needs another job of the same agent; shared comparisons carry it", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const a = yield* dispatch(base, owner, { profile: "quick", target_url: DEMO })
      const b = yield* dispatch(base, owner, { profile: "quick", target_url: DEMO })
      yield* createAgent(base, owner, agentYaml("cmp-bot", DEMO))
      const c = yield* dispatch(base, owner, { profile: "quick", target_url: DEMO, agent_id: "cmp-bot" })
      yield* waitForJob(base, owner, a.id)
      yield* waitForJob(base, owner, b.id)
      yield* waitForJob(base, owner, c.id)
      const same = yield* report(base, owner, b.id, a.id)
      expect(same.comparison!.new).toEqual([])
      expect(same.comparison!.fixed).toEqual([])
      expect(same.comparison!.persisting.length).toBe(same.aggregates.landed)
      expectError(
        yield* call(base, "GET", `/v1/redteam/jobs/${b.id}/report?compare_job_id=${c.id}`, { token: owner.jwt }),
        400,
        "compare_job_mismatch"
      )
      expectError(
        yield* call(base, "GET", `/v1/redteam/jobs/${b.id}/report?compare_job_id=${b.id}`, { token: owner.jwt }),
        400,
        "compare_job_mismatch"
      )
      expectError(yield* call(base, "GET", `/v1/redteam/jobs/rtj_nope/report`, { token: owner.jwt }), 404, "job_not_found")
      const link = expectStatus(
        yield* call(base, "POST", "/v1/redteam/reports", {
          token: owner.jwt,
          body: { job_id: b.id, compare_job_id: a.id }
        }),
        201
      )
      expect(link.compare_job_id).toBe(a.id)
      const shared = expectStatus(yield* call(base, "GET", link.path), 200)
      expect(shared.comparison.compare_job_id).toBe(a.id)
    })
  )

  it.effect("plans: classified paths, vectors, unmapped node types; saved by name, listed, deleted", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      yield* createAgent(
        base,
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
      const plan = expectStatus(
        yield* call(base, "POST", "/v1/agents/plan-bot/redteam/plan", { token: owner.jwt, body: { name: "baseline" } }),
        201
      )
      expect(plan.name).toBe("baseline")
      expect(plan.agent_id).toBe("plan-bot")
      expect(plan.unmapped_node_types).toEqual(["quantum_oracle"])
      const pairs = plan.paths.map((p: any) => `${p.source_category}->${p.sink_category}:${p.sink_node}`).sort()
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
      const techniques = new Set(plan.vectors.map((v: any) => v.technique))
      for (const t of ["direct_injection", "indirect_injection", "tool_parameter_injection", "authority_escalation", "system_prompt_extraction"]) {
        expect(techniques.has(t), t).toBe(true)
      }
      expect(plan.vectors.some((v: any) => v.target_operation === "send_email" && v.source_path.source_node === "kb")).toBe(true)

      const unnamed = expectStatus(yield* call(base, "POST", "/v1/agents/plan-bot/redteam/plan", { token: owner.jwt, body: {} }), 201)
      expect(unnamed.name).toMatch(/^plan-bot plan /)
      const listed = expectStatus(yield* call(base, "GET", "/v1/agents/plan-bot/redteam/plans", { token: owner.jwt }), 200)
      expect(listed.plans.map((p: any) => p.id)).toEqual([unnamed.id, plan.id])
      expectError(yield* call(base, "POST", "/v1/agents/ghost/redteam/plan", { token: owner.jwt, body: {} }), 404, "agent_not_found")
      const stranger = yield* tenant(base)
      expectError(yield* call(base, "DELETE", `/v1/redteam/plans/${plan.id}`, { token: stranger.jwt }), 404, "plan_not_found")
      expect((yield* call(base, "DELETE", `/v1/redteam/plans/${plan.id}`, { token: owner.jwt })).status).toBe(204)
      expectError(yield* call(base, "DELETE", `/v1/redteam/plans/${plan.id}`, { token: owner.jwt }), 404, "plan_not_found")
      const after = expectStatus(yield* call(base, "GET", "/v1/agents/plan-bot/redteam/plans", { token: owner.jwt }), 200)
      expect(after.plans.map((p: any) => p.id)).toEqual([unnamed.id])

      // Static policies: red-team oriented, owned by the agent, disabled; generating twice does not duplicate.
      const generated = expectStatus(
        yield* call(base, "POST", "/v1/agents/plan-bot/redteam/static-policies", { token: owner.jwt }),
        201
      )
      expect(generated.generated.length).toBeGreaterThanOrEqual(6)
      expect(generated.generated.every((p: any) => p.enabled === false && p.owner_agent_id === "plan-bot")).toBe(true)
      expect(generated.generated.some((p: any) => p.id.endsWith(".review-issue_refund"))).toBe(true)
      const again = expectStatus(
        yield* call(base, "POST", "/v1/agents/plan-bot/redteam/static-policies", { token: owner.jwt }),
        201
      )
      expect(again.generated.map((p: any) => p.id)).toEqual(generated.generated.map((p: any) => p.id))
      const policies = expectStatus(yield* call(base, "GET", "/v1/policies", { token: owner.jwt }), 200)
      expect(policies.policies.filter((p: any) => p.id.startsWith("redteam-static.plan-bot.")).length).toBe(
        generated.generated.length
      )
      expectError(yield* call(base, "POST", "/v1/agents/ghost/redteam/static-policies", { token: owner.jwt }), 404)
    })
  )
})
