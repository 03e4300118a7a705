/** Content checker: every applicable policy matched against its target becomes a finding. */
import { describe, expect, it } from "@effect/vitest"
import { contentChecker } from "../../src/authorization/checkers/Content.js"
import type { CheckContext, ProposedAction } from "../../src/authorization/Pipeline.js"
import type { PolicyDocument } from "../../src/catalog/Domain.js"
import { compilePolicy, MAX_POLICY_MATCHES } from "../../src/catalog/PolicyLanguage.js"

const policy = (id: string, action: PolicyDocument["action"], match: PolicyDocument["match"], rewrite?: string) =>
  compilePolicy({
    id,
    description: `policy ${id}`,
    family: "content",
    severity: action === "deny" ? "high" : "low",
    action,
    match,
    ...(rewrite === undefined ? {} : { rewrite })
  })

const noRefund = policy("no-refund", "deny", { type: "literal", value: "full refund", target: "content" })
const maskCard = policy("mask-card", "rewrite", { type: "regex", value: "\\d{4}-\\d{4}", target: "content" }, "[card]")
const legal = policy("legal", "defer", { type: "any_of", value: ["lawsuit", "attorney"], target: "content" })
const caseSensitive = policy("acme", "deny", {
  type: "literal",
  value: "ACME",
  target: "content",
  case_sensitive: true
})
const wireTool = policy("no-wire", "deny", { type: "literal", value: "wire_money", target: "operation" })
const bigAmount = policy("big-amount", "defer", { type: "regex", value: "^\\d{5,}$", target: "params.amount" })
const toList = policy("no-competitor", "deny", { type: "literal", value: "rival.com", target: "params.to" })
const allowFaq = policy("faq", "permit", { type: "literal", value: "faq", target: "content" })
// Invalid (matches empty text): compiled with errors, never matches.
const broken = policy("broken", "deny", { type: "regex", value: "a*", target: "content" })

const context = (action: ProposedAction): CheckContext => ({
  agentId: "support-bot",
  kind: "output.proposed",
  action,
  agent: undefined,
  policies: [noRefund, maskCard, legal, caseSensitive, wireTool, bigAmount, toList, allowFaq, broken],
  labelPolicies: new Map(),
  tools: new Map(),
  granted: false
})

const reply = (content: string): ProposedAction => ({ operation: "reply", content })

// `found` lists [policy_id, effect, matched texts] per finding, in policy order.
const cases: ReadonlyArray<{
  readonly name: string
  readonly action: ProposedAction
  readonly found: ReadonlyArray<readonly [string, string, ReadonlyArray<string>]>
}> = [
  { name: "no policy matches", action: reply("Hello, how can I help?"), found: [] },
  {
    name: "a literal deny, case-insensitive",
    action: reply("You get a FULL REFUND."),
    found: [["no-refund", "deny", ["FULL REFUND"]]]
  },
  {
    name: "a regex rewrite with every match",
    action: reply("Cards 1234-5678 and 8765-4321"),
    found: [["mask-card", "rewrite", ["1234-5678", "8765-4321"]]]
  },
  {
    name: "any_of defer",
    action: reply("My attorney will file a lawsuit"),
    found: [["legal", "defer", ["attorney", "lawsuit"]]]
  },
  { name: "case_sensitive ignores other cases", action: reply("acme Acme"), found: [] },
  { name: "case_sensitive matches its case", action: reply("ACME"), found: [["acme", "deny", ["ACME"]]] },
  {
    name: "an operation target",
    action: { operation: "wire_money", params: { amount: 10 } },
    found: [["no-wire", "deny", ["wire_money"]]]
  },
  {
    name: "a params target reads numbers as text",
    action: { operation: "pay", params: { amount: 250000 } },
    found: [["big-amount", "defer", ["250000"]]]
  },
  { name: "a params target below the pattern", action: { operation: "pay", params: { amount: 25 } }, found: [] },
  {
    name: "a params target searches list items",
    action: { operation: "send", params: { to: ["a@example.com", "b@rival.com"] } },
    found: [["no-competitor", "deny", ["rival.com"]]]
  },
  { name: "a permit policy is a finding too", action: reply("see the FAQ"), found: [["faq", "permit", ["FAQ"]]] },
  {
    name: "several policies, in policy order",
    action: reply("full refund to 1234-5678, or my lawsuit"),
    found: [
      ["no-refund", "deny", ["full refund"]],
      ["mask-card", "rewrite", ["1234-5678"]],
      ["legal", "defer", ["lawsuit"]]
    ]
  },
  { name: "no content: content policies do not match", action: { operation: "reply" }, found: [] }
]

describe("content checker", () => {
  it.each(cases)("$name", ({ action, found }) => {
    const findings = contentChecker.check(context(action))
    expect(
      findings.map((f) => [
        f.policy_id,
        f.effect,
        (f.evidence as { matches: Array<{ text: string }> }).matches.map((m) => m.text)
      ])
    ).toEqual(found)
  })

  it("an invalid policy is compiled with errors and never matches", () => {
    expect(broken.errors).not.toEqual([])
    expect(contentChecker.check(context(reply("aaaa")))).toEqual([])
  })

  it("a rewrite finding carries the policy's rewrite; deny carries a remediation", () => {
    const [deny, rewrite] = contentChecker.check(context(reply("full refund to 1234-5678")))
    expect(deny).toMatchObject({
      policy_id: "no-refund",
      severity: "high",
      reason: "policy no-refund",
      requirement_id: null
    })
    expect(deny?.remediation).not.toBeNull()
    expect(rewrite?.remediation).toBeNull()
    expect(rewrite?.rewrite?.("pay 1234-5678 now")).toBe("pay [card] now")
    expect(rewrite?.evidence).toEqual({
      family: "content",
      matches: [{ target: "content", text: "1234-5678" }],
      spans: [{ start: 15, end: 24 }],
      target: "content"
    })
  })

  it("a rewrite policy with more matches than it may rewrite denies, with the first matches as evidence", () => {
    const cards = Array.from({ length: MAX_POLICY_MATCHES + 1 }, (_, i) => `${1000 + i}-5678`).join(" ")
    const [finding] = contentChecker.check({ ...context(reply(cards)), policies: [maskCard] })
    expect(finding).toMatchObject({ policy_id: "mask-card", effect: "deny" })
    expect(finding?.rewrite).toBeUndefined()
    expect((finding?.evidence as { matches: ReadonlyArray<unknown> }).matches).toHaveLength(MAX_POLICY_MATCHES)
    const [exactly] = contentChecker.check({
      ...context(reply(cards.slice(0, cards.lastIndexOf(" ")))),
      policies: [maskCard]
    })
    expect(exactly).toMatchObject({ policy_id: "mask-card", effect: "rewrite" })
  })
})
