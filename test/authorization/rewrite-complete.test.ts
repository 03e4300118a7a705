/**
 * A rewrite answers only a text it rewrote whole. A policy that matched its
 * target (a param, the operation) rewrites the content, where it may find
 * more occurrences than it may rewrite (MAX_POLICY_MATCHES); an earlier
 * policy's rewrite may add occurrences another policy then meets. Either way
 * what would be left is a deny, not a transformed value that still carries
 * them (before, the occurrences past the first 101 went out). A policy whose
 * match lies only outside the content (a tool call's argument that the
 * content does not carry, or no content at all) has nothing to rewrite: a
 * deny too (before, a `rewrite` with the content unchanged or null, and the
 * caller ran the call with the argument as it was).
 */
import { describe, expect, it } from "@effect/vitest"
import { allCheckers } from "../../src/authorization/checkers/index.js"
import { ALL_ENFORCED, type CheckContext, decide, type ProposedAction } from "../../src/authorization/Pipeline.js"
import type { PolicyDocument } from "../../src/catalog/Domain.js"
import { compilePolicy, MAX_POLICY_MATCHES } from "../../src/catalog/PolicyLanguage.js"

const rewriting = (id: string, match: PolicyDocument["match"], rewrite: string) =>
  compilePolicy({
    id,
    description: `policy ${id}`,
    family: "content",
    severity: "low",
    action: "rewrite",
    match,
    rewrite
  })

const context = (action: ProposedAction, policies: CheckContext["policies"]): CheckContext => ({
  agentId: "support-bot",
  kind: "output.proposed",
  action,
  agent: undefined,
  policies,
  labelPolicies: new Map(),
  tools: new Map(),
  granted: false
})

const cards = (count: number) => Array.from({ length: count }, (_, i) => `${1000 + i}-5678`).join(" ")

describe("rewrites are whole or not at all", () => {
  it("a policy matching a param, with more occurrences in the content than it may rewrite, denies", () => {
    const maskCard = rewriting("mask-card", { type: "regex", value: "\\d{4}-\\d{4}", target: "params.card" }, "[card]")
    const action: ProposedAction = {
      operation: "reply",
      content: cards(MAX_POLICY_MATCHES + 50),
      params: { card: "1000-5678" }
    }
    const decision = decide(context(action, [maskCard]), allCheckers, ALL_ENFORCED)
    expect(decision.effect).toBe("deny")
    expect(decision.transformed_value).toBeNull()
    // (The profile checker adds its finding that the agent has no profile.)
    const masked = decision.findings.filter((finding) => finding.policy_id === "mask-card")
    expect(masked.map((finding) => finding.effect)).toEqual(["deny"])
    expect(masked[0]!.reason).toMatch(/more than 100 occurrences to rewrite/)
    // Within the bound the same policy rewrites every occurrence.
    const fits = decide(
      context({ ...action, content: cards(MAX_POLICY_MATCHES) }, [maskCard]),
      allCheckers,
      ALL_ENFORCED
    )
    expect(fits.effect).toBe("rewrite")
    expect(fits.transformed_value).not.toMatch(/\d{4}-\d{4}/)
  })

  it("a rewrite that leaves another policy more occurrences than it may rewrite denies", () => {
    // The first policy turns each "x" into ten "secret"s for the second to meet.
    const multiply = rewriting("multiply", { type: "literal", value: "x", target: "content" }, " secret".repeat(10))
    const hide = rewriting("hide", { type: "literal", value: "secret", target: "content" }, "[hidden]")
    const action: ProposedAction = { operation: "reply", content: `secret ${"x ".repeat(20)}` }
    const decision = decide(context(action, [multiply, hide]), allCheckers, ALL_ENFORCED)
    expect(decision.effect).toBe("deny")
    expect(decision.transformed_value).toBeNull()
  })

  it("a policy matching only a param the content does not carry denies: a rewrite could not reach it", () => {
    const maskEmail = rewriting(
      "mask-email",
      { type: "regex", value: "[a-z]+@example\\.com", target: "params.to" },
      "[email]"
    )
    const toolCall: ProposedAction = { operation: "send_email", params: { to: "mallory@example.com" } }
    const withText: ProposedAction = { ...toolCall, content: "Sending the report now." }
    for (const action of [toolCall, withText]) {
      const decision = decide(context(action, [maskEmail]), allCheckers, ALL_ENFORCED)
      expect(decision.effect).toBe("deny")
      expect(decision.transformed_value).toBeNull()
      const masked = decision.findings.filter((finding) => finding.policy_id === "mask-email")
      expect(masked.map((finding) => [finding.effect, finding.reason])).toEqual([
        ["deny", "policy mask-email (matched outside the content, where a rewrite cannot reach)"]
      ])
    }
    // The same value in the content as well: rewritten there.
    const carried = decide(
      context({ ...toolCall, content: "Mail to mallory@example.com." }, [maskEmail]),
      allCheckers,
      ALL_ENFORCED
    )
    expect(carried.effect).toBe("rewrite")
    expect(carried.transformed_value).toBe("Mail to [email].")
  })
})
