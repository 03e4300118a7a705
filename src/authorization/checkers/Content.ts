/** Content policies: every enabled policy that applies to the agent, matched against its target. */
import { applyRewrite, MAX_POLICY_MATCHES } from "../../catalog/PolicyLanguage.js"
import type { Checker, EventKind, FindingDraft } from "../Pipeline.js"

const allKinds: ReadonlySet<EventKind> = new Set(["input.received", "tool.result", "output.proposed"])

export const contentChecker: Checker = {
  name: "content",
  kinds: allKinds,
  check: (context) => {
    const findings: Array<FindingDraft> = []
    for (const policy of context.policies) {
      if (!policy.appliesTo.has(context.kind)) continue
      const found = policy.match(context.action)
      if (found.length === 0) continue
      const matches = found.slice(0, MAX_POLICY_MATCHES)
      // Rewriting only the first matches would let the rest through: too many to rewrite is a deny.
      const tooMany = policy.action === "rewrite" && found.length > MAX_POLICY_MATCHES
      if (tooMany) {
        findings.push({
          policy_id: policy.id,
          requirement_id: null,
          reason: `${policy.description} (more than ${MAX_POLICY_MATCHES} matches to rewrite)`,
          remediation: "Send shorter content, or fewer occurrences of the matched text.",
          effect: "deny",
          severity: policy.severity,
          evidence: { family: policy.family, matches: matches.map(({ target, text }) => ({ target, text })) },
          ...(policy.observe ? { observe: true } : {})
        })
        continue
      }
      findings.push({
        policy_id: policy.id,
        requirement_id: null,
        reason: policy.description,
        remediation: policy.action === "deny" ? "Rephrase without the matched text, or escalate to a human." : null,
        effect: policy.action,
        severity: policy.severity,
        evidence: { family: policy.family, matches: matches.map(({ target, text }) => ({ target, text })) },
        ...(policy.escalate ? { escalate: true } : {}),
        ...(policy.observe ? { observe: true } : {}),
        ...(policy.family === "approval" && policy.action === "defer"
          ? { approval: { required: true, policy_id: policy.id, reason: policy.description } }
          : {}),
        ...(policy.action === "rewrite" ? { rewrite: (content: string) => applyRewrite(policy, content) } : {})
      })
    }
    return findings
  }
}
