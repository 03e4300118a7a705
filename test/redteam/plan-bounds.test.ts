/**
 * Plans of large workflows stay bounded (src/redteam/Planner.ts): a
 * `workflow_definition` of a thousand steps used to take minutes of one
 * thread (every step joined to every later one, each walk rescanning every
 * edge) and give a plan of tens of megabytes, in the plan request, in the
 * job runner and in hardening. Now at most MAX_PLAN_PATHS paths are listed,
 * and the channels a job's cases come from still count every path.
 */
import { describe, expect, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import { AgentId } from "../../src/catalog/Domain.js"
import { MAX_PLAN_PATHS, planFor } from "../../src/redteam/Planner.js"
import type { AgentProfileView } from "../../src/redteam/Techniques.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import { agentYaml, createAgent, DEMO, dispatch, waitForJob } from "./redteam-helpers.js"

const agentWith = (workflow_definition: unknown): AgentProfileView => ({
  agent_id: "big-bot",
  system_prompt: null,
  authority: { cannot_promise: [] },
  scope: { in_scope: [], out_of_scope: [] },
  workflow_definition
})

/** 500 web sources and 500 tools, alternating: 125,000 source-to-tool pairs. */
const thousandSteps = Array.from({ length: 1_000 }, (_, i) => (i % 2 === 0 ? `web_${i}` : `send_${i}`))

describe("plans of large workflows", () => {
  it("a thousand-step workflow lists at most MAX_PLAN_PATHS paths, with vectors of those only", () => {
    const plan = planFor(agentWith({ steps: thousandSteps }))
    expect(plan.paths).toHaveLength(MAX_PLAN_PATHS)
    const listed = new Set(plan.paths.map((p) => `${p.source_node}>${p.sink_node}`))
    expect(plan.vectors.every((v) => listed.has(`${v.source_path.source_node}>${v.source_path.sink_node}`))).toBe(true)
    expect(JSON.stringify(plan).length).toBeLessThan(1_000_000)
  })

  it("a channel reached only past the listed paths still shapes the job's cases", () => {
    // user (added: no user-facing step) and 300 web steps reach the tool before the inbox does.
    const steps = [...Array.from({ length: 300 }, (_, i) => `web_${i}`), "inbox", "send_email"]
    const plan = planFor(agentWith({ steps }))
    expect(plan.paths).toHaveLength(MAX_PLAN_PATHS)
    expect(plan.paths.some((p) => p.source_category === "email")).toBe(false)
    expect(plan.channels).toEqual(["user", "web", "email"])
  })

  it("steps flow into every later step, as before: each source reaches each later sink", () => {
    const plan = planFor(agentWith({ steps: ["chat", "kb", "send_sms", "reply"] }))
    expect(plan.paths.map((p) => `${p.source_node}>${p.sink_node}`)).toEqual([
      "chat>send_sms",
      "chat>reply",
      "kb>send_sms",
      "kb>reply"
    ])
    expect(plan.channels).toEqual(["user", "retrieval"])
  })
})

layer(testServer("database"), SERVER_OPTIONS)("a large workflow over HTTP", (it) => {
  it.effect("its plan is answered, bounded, and a job against it completes", () =>
    Effect.gen(function* () {
      const owner = yield* tenant(yield* baseUrl)
      const steps = thousandSteps.map((step) => `    - ${step}`).join("\n")
      yield* createAgent(owner, agentYaml("big-bot", DEMO, `workflow_definition:\n  steps:\n${steps}\n`))
      const plan = yield* owner.api.redteam.createPlan({ path: { id: AgentId.make("big-bot") }, payload: {} })
      expect(plan.paths).toHaveLength(MAX_PLAN_PATHS)
      const job = yield* dispatch(owner, { profile: "quick", target_url: DEMO, agent_id: "big-bot" })
      const done = yield* waitForJob(owner, job.id)
      expect(done.job.attacks).toBe(20)
    })
  )
})
