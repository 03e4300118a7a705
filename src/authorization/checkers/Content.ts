/** Content policies: every enabled policy that applies to the agent, matched against its target. */
import { checkMatchDeadline } from "../../catalog/MatchDeadline.js"
import {
  applyRewrite,
  type CompiledPolicy,
  MAX_POLICY_MATCHES,
  type PolicyMatch
} from "../../catalog/PolicyLanguage.js"
import type { Checker, CheckContext, EventKind, FindingDraft } from "../Pipeline.js"

const allKinds: ReadonlySet<EventKind> = new Set(["input.received", "tool.result", "output.proposed"])

/**
 * What a finding shows: the matched texts (with detector, category and score for detector
 * matches) and their raw UTF-16 ranges; `target` when they all come from one value, else each span
 * names its target.
 */
const evidenceOf = (family: string, matches: ReadonlyArray<PolicyMatch>) => {
  const targets = new Set(matches.map((m) => m.target))
  const single = targets.size <= 1
  const seen = new Set<string>()
  const spans: Array<{ start: number; end: number; target?: string }> = []
  for (const m of matches) {
    const key = `${m.target}\u0000${m.start}:${m.end}`
    if (seen.has(key)) continue
    seen.add(key)
    spans.push(single ? { start: m.start, end: m.end } : { target: m.target, start: m.start, end: m.end })
  }
  return {
    family,
    matches: matches.map(({ category, detector, score, target, text }) =>
      detector === undefined
        ? { target, text }
        : { target, text, detector, category, ...(score === undefined ? {} : { score }) }
    ),
    spans,
    ...(single && matches.length > 0 ? { target: matches[0]!.target } : {})
  }
}

/** The stored version that matched, when the policy is a stored one. */
const versionOf = (policy: CompiledPolicy) => (policy.version === undefined ? {} : { policy_version: policy.version })

/** An approval policy whose intent an approver denied: deny from then on, with the approver's reason. */
const deniedApproval = (policy: CompiledPolicy, reason: string | null, evidence: unknown): FindingDraft => ({
  policy_id: policy.id,
  ...versionOf(policy),
  requirement_id: null,
  reason:
    reason === null
      ? `An approver denied this intent (${policy.description}).`
      : `An approver denied this intent (${policy.description}): ${reason}`,
  remediation: "Do not run this action; propose a different one.",
  effect: "deny",
  severity: policy.severity,
  evidence,
  ...(policy.observe ? { observe: true } : {})
})

/**
 * Why a matching rewrite policy cannot rewrite the action, if it cannot; what it left would go out unchanged, so
 * the finding denies instead. Rewriting only the first matches would let the rest through. A policy whose match
 * is only outside the content (a param, the operation, absent from the text) has nothing to replace: the caller
 * would run the action with the matched value as it was.
 */
const cannotRewrite = (policy: CompiledPolicy, matchCount: number, context: CheckContext) => {
  if (matchCount > MAX_POLICY_MATCHES) {
    return {
      reason: `more than ${MAX_POLICY_MATCHES} matches to rewrite`,
      remediation: "Send shorter content, or fewer occurrences of the matched text."
    }
  }
  const content = context.action.content
  if (content === undefined || policy.matchText(content, context.action, context.agent).length === 0) {
    return {
      reason: "matched outside the content, where a rewrite cannot reach",
      remediation: "Leave the matched value out of the action, or send it in the content where it can be rewritten."
    }
  }
  return undefined
}

export const contentChecker: Checker = {
  name: "content",
  kinds: allKinds,
  check: (context) => {
    const findings: Array<FindingDraft> = []
    let sinceCheck = 0
    for (const policy of context.policies) {
      if (!policy.appliesTo.has(context.kind)) continue
      // One clock read per 16 policies (regex scans check on their own): a few ms apart even on the longest texts.
      if (++sinceCheck === 16) {
        sinceCheck = 0
        checkMatchDeadline()
      }
      const found = policy.evaluate(context.action, context.agent)
      if (found === null) continue
      const matches = found.slice(0, MAX_POLICY_MATCHES)
      const unrewritable = policy.action === "rewrite" ? cannotRewrite(policy, found.length, context) : undefined
      if (unrewritable !== undefined) {
        findings.push({
          policy_id: policy.id,
          ...versionOf(policy),
          requirement_id: null,
          reason: `${policy.description} (${unrewritable.reason})`,
          remediation: unrewritable.remediation,
          effect: "deny",
          severity: policy.severity,
          evidence: evidenceOf(policy.family, matches),
          ...(policy.observe ? { observe: true } : {})
        })
        continue
      }
      const asksApproval = policy.family === "approval" && policy.action === "defer"
      // An approval policy's request is answered like a tool's: a grant covers the intent, a denial stands.
      if (asksApproval && context.denial === undefined && context.granted) continue
      if (asksApproval && context.denial !== undefined) {
        findings.push(deniedApproval(policy, context.denial.reason, evidenceOf(policy.family, matches)))
        continue
      }
      findings.push({
        policy_id: policy.id,
        ...versionOf(policy),
        requirement_id: null,
        reason: policy.description,
        remediation: policy.action === "deny" ? "Rephrase without the matched text, or escalate to a human." : null,
        effect: policy.action,
        severity: policy.severity,
        evidence: evidenceOf(policy.family, matches),
        ...(policy.escalate ? { escalate: true } : {}),
        ...(policy.observe ? { observe: true } : {}),
        ...(asksApproval ? { approval: { required: true, policy_id: policy.id, reason: policy.description } } : {}),
        ...(policy.action === "rewrite"
          ? { rewrite: (content: string) => applyRewrite(policy, content, context.action, context.agent) }
          : {})
      })
    }
    return findings
  }
}
