/**
 * The authorization pipeline: small checkers, each a pure function of the
 * proposed action and the workspace's in-memory catalog snapshot, combined
 * into one decision. The strictest effect among enforced findings wins
 * (deny > defer > rewrite > permit); a checker in `observe` mode (or a
 * policy of its own `mode: observe`) has its findings recorded but cannot
 * change the effect; `off` skips it. Each checker looks at the event kinds
 * it names.
 */
import type { AgentProfile } from "../catalog/Agents.js"
import { type CompiledPolicy, MAX_POLICY_MATCHES } from "../catalog/PolicyLanguage.js"
import type { LabelPolicyRow, ToolMetadataRow } from "../catalog/Repo.js"

export type DecisionEffect = "permit" | "deny" | "defer" | "rewrite"
export type Severity = "low" | "medium" | "high" | "critical"
export type CheckerMode = "off" | "observe" | "enforce"
export type CheckerName = "content" | "profile" | "param" | "flow" | "approval" | "memory"

/** Every checker enforcing (policy test runs judge the policies, not the workspace's modes). */
export const ALL_ENFORCED: Readonly<Record<CheckerName, CheckerMode>> = {
  content: "enforce",
  profile: "enforce",
  param: "enforce",
  flow: "enforce",
  approval: "enforce",
  memory: "enforce"
}
/** What an event is: text entering the agent, a tool's output entering its context, or what it proposes. */
export type EventKind = "input.received" | "tool.result" | "output.proposed"

export interface ParamSource {
  readonly path: string
  readonly origin: string
  readonly source_id: string
  /** Not given by the caller: inferred from what entered the run or session (Provenance.ts); for a value beneath `path` too. */
  readonly inferred?: boolean
}

export interface ProposedAction {
  readonly operation: string
  readonly content?: string | undefined
  readonly params?: Readonly<Record<string, unknown>> | undefined
  readonly sources?: ReadonlyArray<ParamSource> | undefined
}

export interface CheckContext {
  readonly agentId: string
  readonly kind: EventKind
  readonly action: ProposedAction
  /** The agent's profile, when the workspace has one for `agentId`. */
  readonly agent: AgentProfile | undefined
  /** Enabled policies that apply to this agent (unowned, or owned by it). */
  readonly policies: ReadonlyArray<CompiledPolicy>
  readonly labelPolicies: ReadonlyMap<string, LabelPolicyRow>
  readonly tools: ReadonlyMap<string, ToolMetadataRow>
  /** Approval grants that cover this intent. */
  readonly granted: boolean
  /** An approver denied this intent (a denied intent stays denied). */
  readonly denial?: { readonly reason: string | null } | undefined
  /** The workspace's `default_action`: the effect of a finding that has no rule of its own (an unregistered agent). */
  readonly defaultEffect?: DecisionEffect | undefined
}

/** What a checker reports; the pipeline adds ids, the checker name and the mode. */
export interface FindingDraft {
  readonly policy_id: string | null
  /** The version of the stored policy that matched (content findings). */
  readonly policy_version?: number
  readonly requirement_id: string | null
  readonly reason: string
  readonly remediation: string | null
  readonly effect: DecisionEffect
  readonly severity: Severity
  readonly evidence: unknown
  /** Ask for a human: the decision's status becomes `escalated`. */
  readonly escalate?: boolean
  /** An approval this finding asks for (approval checker). */
  readonly approval?: unknown
  /** How a `rewrite` finding transforms the content; undefined when it cannot rewrite all of it. */
  readonly rewrite?: (content: string) => string | undefined
  /** Recorded only, whatever the checker's mode (a policy in `observe` mode). */
  readonly observe?: boolean
}

export interface Checker {
  readonly name: CheckerName
  /** The event kinds it looks at (docs/authorization.md). */
  readonly kinds: ReadonlySet<EventKind>
  readonly check: (context: CheckContext) => ReadonlyArray<FindingDraft>
}

export interface Finding extends Omit<FindingDraft, "escalate" | "approval" | "rewrite" | "observe"> {
  readonly id: string
  readonly source: CheckerName
}

export interface Decision {
  readonly effect: DecisionEffect
  readonly domain: string
  readonly reason: string
  readonly findings: ReadonlyArray<Finding>
  readonly transformed_value: string | null
  readonly status: "decided" | "escalated" | "awaiting_approval"
  readonly approval: unknown
}

const rank: Record<DecisionEffect, number> = { permit: 0, rewrite: 1, defer: 2, deny: 3 }

export const strictest = (effects: ReadonlyArray<DecisionEffect>): DecisionEffect =>
  effects.reduce<DecisionEffect>((best, effect) => (rank[effect] > rank[best] ? effect : best), "permit")

type Enforced = FindingDraft & { readonly source: CheckerName }

/** The content after every enforced rewrite in order; `incomplete`: the first that could not rewrite it all. */
const rewriteAll = (enforced: ReadonlyArray<Enforced>, content: string | undefined) => {
  let text = content
  for (const finding of enforced) {
    if (finding.rewrite === undefined || text === undefined || finding.effect !== "rewrite") continue
    const next = finding.rewrite(text)
    if (next === undefined) return { content: null, incomplete: finding }
    text = next
  }
  return { content: text ?? null, incomplete: undefined }
}

/**
 * A rewrite that could not rewrite all it met (more occurrences than a policy may rewrite, some added by an
 * earlier rewrite) denies: what it left would go out. Its finding says so.
 */
const incompleteRewrite = (findings: ReadonlyArray<Finding>, finding: Enforced): Decision => {
  const reason = `${finding.reason} (more than ${MAX_POLICY_MATCHES} occurrences to rewrite)`
  return {
    effect: "deny",
    domain: finding.source,
    reason,
    findings: findings.map((each) =>
      each.policy_id === finding.policy_id && each.source === finding.source && each.effect === "rewrite"
        ? { ...each, effect: "deny", reason }
        : each
    ),
    transformed_value: null,
    status: "decided",
    approval: null
  }
}

export const decide = (
  context: CheckContext,
  checkers: ReadonlyArray<Checker>,
  modes: Readonly<Record<CheckerName, CheckerMode>>,
  /** The workspace's `default_action`: the effect when no enforced finding decides. */
  defaultEffect: "permit" | "deny" | "defer" = "permit"
): Decision => {
  const findings: Array<Finding> = []
  const enforced: Array<Enforced> = []
  for (const checker of checkers) {
    const checkerMode = modes[checker.name]
    if (checkerMode === "off" || !checker.kinds.has(context.kind)) continue
    for (const draft of checker.check(context)) {
      // Modes combine to the least strict: a policy's own `observe` wins over an enforcing checker.
      const mode = draft.observe === true ? "observe" : checkerMode
      const { approval: _approval, escalate: _escalate, rewrite: _rewrite, observe: _observe, ...rest } = draft
      findings.push({
        ...rest,
        id: `f${findings.length + 1}`,
        source: checker.name,
        evidence: mode === "observe" ? { observed_only: true, detail: draft.evidence } : draft.evidence
      })
      if (mode === "enforce") enforced.push({ ...draft, source: checker.name })
    }
  }
  if (enforced.length === 0 && defaultEffect !== "permit") {
    return {
      effect: defaultEffect,
      domain: "default",
      reason: `No guardrail decided; the workspace's default action (${defaultEffect}) applies.`,
      findings,
      transformed_value: null,
      status: "decided",
      approval: null
    }
  }
  const effect = strictest(enforced.map((finding) => finding.effect))
  const rewritten = effect === "rewrite" ? rewriteAll(enforced, context.action.content) : undefined
  if (rewritten?.incomplete !== undefined) return incompleteRewrite(findings, rewritten.incomplete)
  const deciding = enforced.find((finding) => finding.effect === effect)
  const approval = enforced.find((finding) => finding.approval !== undefined)?.approval ?? null
  const escalated =
    effect === "defer" && enforced.some((finding) => finding.escalate === true && finding.effect === "defer")
  return {
    effect,
    domain: deciding?.source ?? "content",
    reason: deciding?.reason ?? "No guardrail objected.",
    findings,
    transformed_value: rewritten?.content ?? null,
    status: escalated ? "escalated" : approval !== null && effect === "defer" ? "awaiting_approval" : "decided",
    approval: effect === "defer" ? approval : null
  }
}
