/** The pipeline's `decide`: every checker's findings combined into one decision. */
import { describe, expect, it } from "@effect/vitest"
import { allCheckers } from "../../src/authorization/checkers/index.js"
import {
  ALL_ENFORCED,
  type CheckContext,
  type CheckerMode,
  type CheckerName,
  decide,
  type DecisionEffect,
  type ProposedAction,
  strictest
} from "../../src/authorization/Pipeline.js"
import { normalizeProfile } from "../../src/catalog/Agents.js"
import type { PolicyDocument } from "../../src/catalog/Domain.js"
import { compilePolicy } from "../../src/catalog/PolicyLanguage.js"
import type { ToolMetadataRow } from "../../src/catalog/Repo.js"

const policy = (id: string, action: PolicyDocument["action"], match: PolicyDocument["match"], rewrite?: string) =>
  compilePolicy({
    id,
    description: `policy ${id}`,
    family: "content",
    severity: "high",
    action,
    match,
    ...(rewrite === undefined ? {} : { rewrite })
  })

const policies = [
  policy("no-refund", "deny", { type: "literal", value: "full refund", target: "content" }),
  policy("mask-card", "rewrite", { type: "regex", value: "\\d{4}-\\d{4}", target: "content" }, "[card]"),
  policy("legal", "defer", { type: "literal", value: "lawsuit", target: "content" })
]

const agent = normalizeProfile({
  agent_id: "support-bot",
  display_name: "Support",
  authority: { cannot_promise: ["free shipping"] },
  scope: {},
  tone: { target: "friendly", forbidden: ["stupid"] },
  escalation_triggers: ["speak to a manager"]
})

const row = (tool: string, metadata: Record<string, unknown>): ToolMetadataRow => ({
  tool,
  enabled: true,
  version: 1,
  metadata: { tool, ...metadata }
})

const tools = new Map(
  [
    row("wire_money", {
      reversible: false,
      side_effect: "payment",
      approval: { required: true, approvers: ["finance"], reason: "Payments need finance." },
      params: [{ path: "amount", role: "authority_bearing", limit: { max: 500 } }]
    }),
    row("lookup_order", { reversible: true, side_effect: "none" })
  ].map((r) => [r.tool, r])
)

const context = (action: ProposedAction, granted = false): CheckContext => ({
  agentId: "support-bot",
  kind: "output.proposed",
  action,
  agent,
  policies,
  labelPolicies: new Map(),
  tools,
  granted
})

const modes = (overrides: Partial<Record<CheckerName, CheckerMode>> = {}): Record<CheckerName, CheckerMode> => ({
  ...ALL_ENFORCED,
  ...overrides
})

const reply = (content: string): ProposedAction => ({ operation: "reply", content })
const wire = (amount: number, sources?: ProposedAction["sources"]): ProposedAction => ({
  operation: "wire_money",
  params: { amount },
  sources
})

describe("strictest", () => {
  const cases: ReadonlyArray<readonly [ReadonlyArray<DecisionEffect>, DecisionEffect]> = [
    [[], "permit"],
    [["permit"], "permit"],
    [["rewrite", "permit"], "rewrite"],
    [["rewrite", "defer"], "defer"],
    [["defer", "deny", "rewrite"], "deny"],
    [["deny", "permit"], "deny"]
  ]
  it.each(cases)("%j -> %s", (effects, expected) => expect(strictest(effects)).toBe(expected))
})

// The decision's headline fields for one action under some modes.
const cases: ReadonlyArray<{
  readonly name: string
  readonly context: CheckContext
  readonly modes?: Partial<Record<CheckerName, CheckerMode>>
  readonly effect: DecisionEffect
  readonly domain: string
  readonly status: "decided" | "escalated" | "awaiting_approval"
  readonly sources: ReadonlyArray<CheckerName>
}> = [
  {
    name: "nothing objects: permit",
    context: context(reply("Your order ships today.")),
    effect: "permit",
    domain: "content",
    status: "decided",
    sources: []
  },
  {
    name: "deny beats defer and rewrite",
    context: context(reply("A full refund for 1234-5678, no lawsuit needed.")),
    effect: "deny",
    domain: "content",
    status: "decided",
    sources: ["content", "content", "content"]
  },
  {
    name: "defer beats rewrite",
    context: context(reply("Card 1234-5678 and the lawsuit.")),
    effect: "defer",
    domain: "content",
    status: "decided",
    sources: ["content", "content"]
  },
  {
    name: "a profile deny beats a content rewrite",
    context: context(reply("free shipping to card 1234-5678")),
    effect: "deny",
    domain: "profile",
    status: "decided",
    sources: ["content", "profile"]
  },
  {
    name: "an escalation trigger: escalated",
    context: context(reply("Let me speak to a manager.")),
    effect: "defer",
    domain: "profile",
    status: "escalated",
    sources: ["profile"]
  },
  {
    name: "an approval-required tool: awaiting approval",
    context: context(wire(100)),
    effect: "defer",
    domain: "approval",
    status: "awaiting_approval",
    sources: ["approval"]
  },
  {
    name: "a granted approval: permit",
    context: context(wire(100), true),
    effect: "permit",
    domain: "content",
    status: "decided",
    sources: []
  },
  {
    name: "a param deny beats the approval defer",
    context: context(wire(900)),
    effect: "deny",
    domain: "param",
    status: "decided",
    sources: ["param", "approval"]
  },
  {
    name: "a flow deny on untrusted data driving an irreversible tool",
    context: context(wire(100, [{ path: "amount", origin: "web", source_id: "page" }]), true),
    effect: "deny",
    domain: "flow",
    status: "decided",
    sources: ["flow"]
  },
  {
    name: "observe mode records without deciding",
    context: context(wire(900)),
    modes: { param: "observe", approval: "observe" },
    effect: "permit",
    domain: "content",
    status: "decided",
    sources: ["param", "approval"]
  },
  {
    name: "off mode skips the checker",
    context: context(wire(900)),
    modes: { param: "off", approval: "off" },
    effect: "permit",
    domain: "content",
    status: "decided",
    sources: []
  },
  {
    name: "an observed approval next to an enforced param deny",
    context: context(wire(900)),
    modes: { approval: "observe" },
    effect: "deny",
    domain: "param",
    status: "decided",
    sources: ["param", "approval"]
  },
  {
    name: "content off: only the profile speaks",
    context: context(reply("full refund, stupid")),
    modes: { content: "off" },
    effect: "rewrite",
    domain: "profile",
    status: "decided",
    sources: ["profile"]
  }
]

describe("decide", () => {
  it.each(cases)("$name", (c) => {
    const decision = decide(c.context, allCheckers, modes(c.modes))
    expect({ effect: decision.effect, domain: decision.domain, status: decision.status }).toEqual({
      effect: c.effect,
      domain: c.domain,
      status: c.status
    })
    expect(decision.findings.map((f) => f.source)).toEqual(c.sources)
    expect(decision.findings.map((f) => f.id)).toEqual(c.sources.map((_, i) => `f${i + 1}`))
  })

  it("no findings: permit with a reason and nothing else", () => {
    expect(decide(context(reply("Hello!")), allCheckers, modes())).toEqual({
      effect: "permit",
      domain: "content",
      reason: "No guardrail objected.",
      findings: [],
      transformed_value: null,
      status: "decided",
      approval: null
    })
  })

  it("the decision's reason is the deciding finding's", () => {
    const decision = decide(context(reply("Card 1234-5678 and the lawsuit.")), allCheckers, modes())
    expect(decision.reason).toBe("policy legal")
    expect(decision.transformed_value).toBeNull()
  })

  it("rewrite applies every enforced rewrite: content policy and profile tone", () => {
    const decision = decide(context(reply("Stupid card 1234-5678, stupid!")), allCheckers, modes())
    expect(decision.effect).toBe("rewrite")
    expect(decision.transformed_value).toBe("[removed] card [card], [removed]!")
    expect(decision.findings.map((f) => f.requirement_id ?? f.policy_id)).toEqual([
      "mask-card",
      "tone.forbidden:stupid"
    ])
  })

  it("an observed rewrite does not transform the content", () => {
    const decision = decide(context(reply("Stupid card 1234-5678")), allCheckers, modes({ profile: "observe" }))
    expect(decision.transformed_value).toBe("Stupid card [card]")
  })

  it("observe mode wraps the evidence and keeps the finding's own effect", () => {
    const decision = decide(context(wire(900)), allCheckers, modes({ param: "observe", approval: "observe" }))
    expect(decision.findings[0]).toMatchObject({
      source: "param",
      effect: "deny",
      requirement_id: "param:wire_money.amount",
      evidence: { observed_only: true, detail: { path: "amount", value: 900, limit: { max: 500 } } }
    })
    expect(decision.findings[1]?.evidence).toMatchObject({ observed_only: true })
    expect(decision.approval).toBeNull()
  })

  it("an approval finding exposes its approval request", () => {
    const decision = decide(context(wire(100)), allCheckers, modes())
    expect(decision.approval).toEqual({
      required: true,
      tool: "wire_money",
      reason: "Payments need finance.",
      approvers: ["finance"]
    })
    expect(decision.reason).toBe("Payments need finance.")
    // Only the public finding fields: the approval request is not repeated on the finding.
    expect(Object.keys(decision.findings[0]!).sort()).toEqual(
      ["effect", "evidence", "id", "policy_id", "reason", "remediation", "requirement_id", "severity", "source"].sort()
    )
  })

  it("a deny hides the approval request: asking for it would be pointless", () => {
    const decision = decide(context(wire(900)), allCheckers, modes())
    expect(decision.approval).toBeNull()
    expect(decision.status).toBe("decided")
  })

  it("an escalation wins over an awaiting approval", () => {
    const action: ProposedAction = { ...wire(100), content: "speak to a manager" }
    const decision = decide(context(action), allCheckers, modes())
    expect(decision.status).toBe("escalated")
  })

  it("runs the checkers in order: content, profile, param, flow, approval, memory", () => {
    expect(allCheckers.map((checker) => checker.name)).toEqual([
      "content",
      "profile",
      "param",
      "flow",
      "approval",
      "memory"
    ])
  })
})
