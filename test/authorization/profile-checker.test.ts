/** Profile checker: authority, scope, tone and escalation triggers of the agent's profile. */
import { describe, expect, it } from "@effect/vitest"
import { profileChecker } from "../../src/authorization/checkers/Profile.js"
import type { CheckContext } from "../../src/authorization/Pipeline.js"
import { normalizeProfile } from "../../src/catalog/Agents.js"

const agent = normalizeProfile({
  agent_id: "support-bot",
  display_name: "Support",
  authority: { can_promise: ["a callback"], cannot_promise: ["full refund", "退款", "$100 credit", "  "] },
  scope: { in_scope: ["orders"], out_of_scope: ["medical advice"] },
  tone: { target: "friendly", forbidden: ["stupid"] },
  escalation_triggers: ["speak to a manager"]
})

const context = (content: string | undefined, withAgent = true): CheckContext => ({
  agentId: "support-bot",
  kind: "output.proposed",
  action: { operation: "reply", content },
  agent: withAgent ? agent : undefined,
  policies: [],
  labelPolicies: new Map(),
  tools: new Map(),
  granted: false
})

// `found` lists [requirement_id, effect] per finding, in check order.
const cases: ReadonlyArray<{
  readonly name: string
  readonly context: CheckContext
  readonly found: ReadonlyArray<readonly [string, string]>
}> = [
  { name: "a harmless reply", context: context("Your order ships today."), found: [] },
  {
    name: "a forbidden promise is denied",
    context: context("You will get a full refund."),
    found: [["authority.cannot_promise:full refund", "deny"]]
  },
  {
    name: "case-insensitive",
    context: context("FULL REFUND!"),
    found: [["authority.cannot_promise:full refund", "deny"]]
  },
  { name: "whole words only", context: context("a full refunding process"), found: [] },
  {
    name: "a CJK phrase inside a sentence (no spaces between words)",
    context: context("我们保证给您退款"),
    found: [["authority.cannot_promise:退款", "deny"]]
  },
  {
    name: "regex metacharacters in a phrase are literal",
    context: context("Here is a $100 credit."),
    found: [["authority.cannot_promise:$100 credit", "deny"]]
  },
  { name: "a blank phrase never matches", context: context("   "), found: [] },
  {
    name: "an out-of-scope topic is deferred",
    context: context("I can give medical advice."),
    found: [["scope.out_of_scope:medical advice", "defer"]]
  },
  {
    name: "a forbidden tone word is rewritten",
    context: context("That was stupid."),
    found: [["tone.forbidden:stupid", "rewrite"]]
  },
  {
    name: "an escalation trigger defers",
    context: context("I want to speak to a manager"),
    found: [["escalation_triggers:speak to a manager", "defer"]]
  },
  {
    name: "several findings in check order",
    context: context("Stupid question: full refund? Or speak to a manager about medical advice."),
    found: [
      ["authority.cannot_promise:full refund", "deny"],
      ["scope.out_of_scope:medical advice", "defer"],
      ["tone.forbidden:stupid", "rewrite"],
      ["escalation_triggers:speak to a manager", "defer"]
    ]
  },
  // An agent without a profile is said in a finding whose effect is the default action (permit unless set).
  { name: "no agent profile", context: context("full refund", false), found: [["agent.registered", "permit"]] },
  {
    name: "no agent profile, default action deny",
    context: { ...context("full refund", false), defaultEffect: "deny" },
    found: [["agent.registered", "deny"]]
  },
  // Characters that do not show (or show as the same letter) do not slip a phrase past.
  {
    name: "a zero-width space inside a forbidden promise",
    context: context("You will get a full re\u200bfund."),
    found: [["authority.cannot_promise:full refund", "deny"]]
  },
  {
    name: "a no-break space between the words of a forbidden promise",
    context: context("You will get a full\u00a0refund."),
    found: [["authority.cannot_promise:full refund", "deny"]]
  },
  {
    name: "a Cyrillic look-alike letter in a forbidden promise",
    context: context("You will get a full r\u0435fund."),
    found: [["authority.cannot_promise:full refund", "deny"]]
  },
  {
    name: "full-width letters in an escalation trigger",
    context: context("I want to ｓｐｅａｋ ｔｏ ａ ｍａｎａｇｅｒ"),
    found: [["escalation_triggers:speak to a manager", "defer"]]
  },
  {
    name: "a Russian word next to a phrase's letters is not folded into it",
    context: context("ful\u043b refund"),
    found: []
  },
  { name: "no content", context: context(undefined), found: [] },
  { name: "empty content", context: context(""), found: [] }
]

describe("profile checker", () => {
  it.each(cases)("$name", ({ context, found }) => {
    expect(profileChecker.check(context).map((f) => [f.requirement_id, f.effect])).toEqual(found)
  })

  it("rewrites every forbidden word and marks triggers for escalation", () => {
    const [tone, trigger] = profileChecker.check(context("Stupid, STUPID. Speak to a manager."))
    expect(tone?.rewrite?.("Stupid, STUPID.")).toBe("[removed], [removed].")
    expect(trigger).toMatchObject({ escalate: true, severity: "high" })
  })

  it("rewrites a forbidden word hidden by invisible or look-alike characters, with what hid it", () => {
    const [tone] = profileChecker.check(context("That was stu\u200bpid."))
    expect(tone?.requirement_id).toBe("tone.forbidden:stupid")
    expect(tone?.rewrite?.("stu\u200bpid, st\u00fapid, \u0455tupid and stupid.")).toBe(
      "[removed], st\u00fapid, [removed] and [removed]."
    )
  })
})
