/**
 * The pure parts of one decision (Authorization.ts's warm steps): the
 * intent id, the checker modes of an environment,
 * the evaluation over a catalog snapshot, and what a decision produces (the
 * answer, its signed receipt, the trace and `decisions` event to commit, and
 * an escalation notice to send).
 */
import { Schema } from "effect"
import { createHash } from "node:crypto"
import type { AgentProfile } from "../catalog/Agents.js"
import type { Snapshot } from "../catalog/Snapshot.js"
import type { Caller } from "../identity/Authentication.js"
import type { RuntimeConfig } from "../identity/WorkspaceSettings.js"
import { decisionDetails } from "../operations/Telemetry.js"
import { prefixedId } from "../platform/Ids.js"
import { Topics } from "../platform/Topics.js"
import { keepTracePayload } from "../privacy/Payloads.js"
import type { PolicySet } from "../policysets/Digest.js"
import { keepJson, keepString } from "../privacy/Redaction.js"
import { TraceId } from "../runs/Domain.js"
import { allCheckers } from "./checkers/index.js"
import type { DecisionRecord } from "./DecisionWriter.js"
import { DecisionMessage } from "./Domain.js"
import type { EscalationNotice } from "./Escalations.js"
import {
  type CheckerMode,
  type CheckerName,
  type Decision,
  decide,
  type EventKind,
  type ParamSource,
  type ProposedAction
} from "./Pipeline.js"
import { canonicalJson } from "./Receipts.js"

export interface ProposedEventInput {
  readonly kind: EventKind
  readonly principal: { readonly agent_id: string; readonly environment_id: string; readonly workspace_id: string }
  readonly action: ProposedAction
  readonly run_id?: string | undefined
  readonly run_event_id?: string | undefined
  readonly session_id?: string | undefined
  readonly metadata?: unknown
}

export type Environment = RuntimeConfig["environments"] extends ReadonlyMap<string, infer E> ? E : never

const encodeDecisionMessage = Schema.encodeSync(DecisionMessage)

/** `metadata.workflow_step` of a proposed event, when it is a string (an analytics dimension). */
const workflowStepOf = (metadata: unknown): string | null => {
  const step =
    typeof metadata === "object" && metadata !== null
      ? (metadata as Record<string, unknown>)["workflow_step"]
      : undefined
  return typeof step === "string" ? step : null
}

/** The same agent proposing the same action in the same environment is the same intent (approval grants bind to it). */
export const intentIdOf = (workspaceId: string, event: ProposedEventInput) =>
  `int_${createHash("sha256")
    .update(
      canonicalJson(
        // Proposed outputs keep the intent ids they always had; the other kinds are told apart by their kind.
        event.kind === "output.proposed"
          ? { workspaceId, principal: event.principal, action: event.action }
          : { workspaceId, kind: event.kind, principal: event.principal, action: event.action }
      )
    )
    .digest("hex")
    .slice(0, 32)}`

/** Why decisions fail closed, as the `guardrail_decisions_failed_closed_total` metric counts them. */
export type FailedClosedCause =
  | "decision_allowance_exceeded"
  | "service_allowance_exceeded"
  | "decision_time_exceeded"
  | "decision_failed"
  | "registry_unreadable"
  | "unrecorded"

/**
 * Why `decision` failed closed (undefined: it was decided). The allowance and the time limit name
 * themselves in the finding's `failure`; any other fail-closed decision could not read the registry.
 */
export const failedClosedCause = (decision: Decision): FailedClosedCause | undefined => {
  const finding = decision.findings[0]
  if (finding?.requirement_id !== "system:fail_closed") return undefined
  const failure =
    typeof finding.evidence === "object" && finding.evidence !== null && "failure" in finding.evidence
      ? finding.evidence.failure
      : undefined
  return failure === "decision_allowance_exceeded" ||
    failure === "service_allowance_exceeded" ||
    failure === "decision_time_exceeded" ||
    failure === "decision_failed"
    ? failure
    : "registry_unreadable"
}

/** A decision made without the checkers: fail closed with the reason as a finding. */
export const failClosed = (reason: string, evidence: unknown): Decision => ({
  effect: "defer",
  domain: "system",
  reason,
  findings: [
    {
      id: "f1",
      source: "content",
      policy_id: null,
      requirement_id: "system:fail_closed",
      reason,
      remediation: "Do not execute the proposed action; retry once the service recovers.",
      effect: "defer",
      severity: "high",
      evidence
    }
  ],
  transformed_value: null,
  status: "decided",
  approval: null
})

/** The checker modes in force: the environment's overrides over the workspace's settings. */
export const modesOf = (
  config: RuntimeConfig,
  environment: Environment
): Readonly<Record<CheckerName, CheckerMode>> => ({
  content: "enforce",
  profile: "enforce",
  approval: environment.modes.approval_checker_mode ?? config.settings.approval_checker_mode,
  flow: environment.modes.flow_checker_mode ?? config.settings.flow_checker_mode,
  memory: environment.modes.memory_checker_mode ?? config.settings.memory_checker_mode,
  param: environment.modes.param_checker_mode ?? config.settings.param_checker_mode
})

/** Modes combine to the least strict: a caller's `observe` (a gateway route's) caps every enforcing checker. */
export const capModes = (
  modes: Readonly<Record<CheckerName, CheckerMode>>,
  ceiling: "observe" | "enforce" | undefined
): Readonly<Record<CheckerName, CheckerMode>> =>
  ceiling !== "observe"
    ? modes
    : {
        content: modes.content === "off" ? "off" : "observe",
        profile: modes.profile === "off" ? "off" : "observe",
        param: modes.param === "off" ? "off" : "observe",
        flow: modes.flow === "off" ? "off" : "observe",
        approval: modes.approval === "off" ? "off" : "observe",
        memory: modes.memory === "off" ? "off" : "observe"
      }

/** Whether deciding needs the approval grants (a tool that asks for approval, with the checker on). */
export const needsGrant = (
  snapshot: Snapshot,
  event: ProposedEventInput,
  modes: Readonly<Record<CheckerName, CheckerMode>>
) => {
  const tool = snapshot.tools.get(event.action.operation)
  return (
    event.kind === "output.proposed" &&
    tool !== undefined &&
    modes.approval !== "off" &&
    Boolean((tool.metadata as { approval?: unknown }).approval)
  )
}

/**
 * Whether a proposed output was deferred for an approval that no tool metadata asked for (an `approval`
 * policy's): deciding then reads the intent's grant and denial, and decides again.
 */
export const asksPolicyApproval = (event: ProposedEventInput, decision: Decision) =>
  event.kind === "output.proposed" && decision.effect === "defer" && decision.approval !== null

/** The string values of a structured value, depth first (bounded by the request's own bounds). */
export const stringsOf = (value: unknown, out: Array<string>): Array<string> => {
  if (typeof value === "string") out.push(value)
  else if (Array.isArray(value)) for (const item of value) stringsOf(item, out)
  else if (typeof value === "object" && value !== null) for (const item of Object.values(value)) stringsOf(item, out)
  return out
}

/**
 * The action as the checkers screen it: a `tool.result` that carries structured output (`params.result`) is
 * screened with the text of its string values, one a line, after its `content` if it has one (output hidden
 * there beside harmless content was not screened). Inferred labels (Provenance.ts) follow the caller's, which
 * win: only unlabelled values get one.
 */
const screenedAction = (event: ProposedEventInput, inferred: ReadonlyArray<ParamSource>): ProposedAction => {
  const { action } = event
  const labelled = inferred.length > 0 ? { ...action, sources: [...(action.sources ?? []), ...inferred] } : action
  if (event.kind !== "tool.result" || action.params?.["result"] === undefined) return labelled
  const texts = stringsOf(action.params["result"], [])
  return { ...labelled, content: [...(action.content === undefined ? [] : [action.content]), ...texts].join("\n") }
}

/** Every checker over the snapshot; `inferred`: labels of unlabelled param values from the run's provenance. */
export const evaluate = (
  snapshot: Snapshot,
  event: ProposedEventInput,
  modes: Readonly<Record<CheckerName, CheckerMode>>,
  granted: boolean,
  defaultEffect: "permit" | "deny" | "defer",
  inferred: ReadonlyArray<ParamSource> = [],
  denial?: { readonly reason: string | null }
) => {
  const agentId = event.principal.agent_id
  return decide(
    {
      agentId,
      kind: event.kind,
      action: screenedAction(event, inferred),
      agent: snapshot.agents.get(agentId) as AgentProfile | undefined,
      policies: snapshot.policies.filter((policy) => policy.ownerAgentId === null || policy.ownerAgentId === agentId),
      labelPolicies: snapshot.labelPolicies,
      tools: snapshot.tools,
      granted,
      denial,
      defaultEffect
    },
    allCheckers,
    modes,
    defaultEffect
  )
}

export interface AppliedGrant {
  readonly intent_id: string
  readonly granted_by: string
  readonly expires_at: string
}

/**
 * What a decision produces: the answer, the trace, receipt and `decisions`
 * event to commit before it, and the escalation notice to send after it.
 * `sign` turns the receipt's content into its JWS.
 */
export const decisionOutcome = (input: {
  readonly caller: Caller
  readonly event: ProposedEventInput
  readonly config: RuntimeConfig
  readonly environment: Environment
  readonly intentId: string
  readonly decision: Decision
  readonly appliedGrant: AppliedGrant | null
  readonly startedAt: number
  readonly sign: (content: unknown) => string
  /** What decided (src/policysets); null when deciding failed closed before the catalog could be read. */
  readonly policySet: PolicySet | null
}) => {
  const { caller, event, config, decision, appliedGrant, policySet } = input
  const policySetDigest = policySet?.digest ?? null
  const { principal } = event
  const traceId = prefixedId("trc")
  const receiptId = prefixedId("rcpt")
  const issuedAt = new Date().toISOString()
  const receiptContent = {
    receipt_id: receiptId,
    trace_id: traceId,
    intent_id: input.intentId,
    workspace_id: caller.workspaceId,
    agent_id: principal.agent_id,
    environment_id: principal.environment_id,
    effect: decision.effect,
    findings: decision.findings.map((finding) => ({
      id: finding.id,
      policy_id: finding.policy_id,
      effect: finding.effect
    })),
    // The receipt is stored: it attests to the rewritten value as the workspace keeps content.
    transformed_value: keepJson(config.settings.data_handling_mode, decision.transformed_value),
    issued_at: issuedAt,
    policy_set_digest: policySetDigest
  }
  const jws = input.sign(receiptContent)
  const latencyMs = Math.round(performance.now() - input.startedAt)
  const response = {
    effect: decision.effect,
    domain: decision.domain,
    reason: decision.reason,
    intent_id: input.intentId,
    receipt_id: receiptId,
    trace_id: TraceId.make(traceId),
    latency_ms: latencyMs,
    findings: decision.findings,
    applied_grant: appliedGrant,
    approval: decision.approval,
    lease: appliedGrant === null ? null : { expires_at: appliedGrant.expires_at },
    status: decision.status,
    transformed_value: decision.transformed_value
  }
  const record: DecisionRecord = {
    trace: {
      id: traceId,
      workspaceId: caller.workspaceId,
      agentId: principal.agent_id,
      environmentId: principal.environment_id,
      environment: input.environment.slug,
      runId: event.run_id ?? null,
      runEventId: event.run_event_id ?? null,
      sessionId: event.session_id ?? null,
      intentId: input.intentId,
      receiptId,
      decision: decision.effect,
      domain: decision.domain,
      elapsedMs: latencyMs,
      policySetDigest,
      // Decided on the raw content; stored as the workspace's data_handling_mode allows.
      payload: keepTracePayload(config.settings.data_handling_mode, {
        request: { kind: event.kind, action: event.action, metadata: event.metadata ?? null },
        response
      })
    },
    receipt: { id: receiptId, workspaceId: caller.workspaceId, traceId, jws },
    // The set's content travels until a committed decision has stored it (policy_sets, insert-if-absent).
    policySet:
      policySet === null || policySet.stored
        ? undefined
        : { workspaceId: caller.workspaceId, digest: policySet.digest, content: policySet.content },
    event: {
      topic: Topics.decisions,
      key: caller.workspaceId,
      value: {
        ...encodeDecisionMessage({
          schema_version: 1,
          trace_id: traceId,
          workspace_id: caller.workspaceId,
          agent_id: principal.agent_id,
          environment_id: principal.environment_id,
          principal_id: caller.principalId,
          run_id: event.run_id ?? null,
          session_id: event.session_id ?? null,
          effect: decision.effect,
          status: decision.status,
          domain: decision.domain,
          policy_ids: decision.findings.flatMap((finding) => (finding.policy_id === null ? [] : [finding.policy_id])),
          workflow_step: workflowStepOf(event.metadata),
          latency_ms: latencyMs,
          decided_at: issuedAt
        }),
        // telemetry_enabled: the decision's reason and findings travel on the operator-facing topic.
        ...decisionDetails(config.settings, decision)
      }
    }
  }
  const webhook = config.settings.escalation_webhook_url
  const escalation: { readonly url: string; readonly notice: EscalationNotice } | null =
    decision.status === "escalated" && webhook !== null
      ? {
          url: webhook,
          notice: {
            type: "decision.escalated",
            trace_id: traceId,
            receipt_id: receiptId,
            workspace_id: caller.workspaceId,
            agent_id: principal.agent_id,
            environment_id: principal.environment_id,
            // Leaves the system of record as the decisions topic's reasons do: under the data handling mode.
            reason: keepString(config.settings.data_handling_mode, decision.reason),
            findings: decision.findings.map(({ policy_id, requirement_id }) => ({ policy_id, requirement_id })),
            decided_at: issuedAt
          }
        }
      : null
  return { response, record, escalation, policySetDigest }
}

export type DecisionAnswer = ReturnType<typeof decisionOutcome>["response"]

/** The answer when the decision could not be recorded: without a durable trace it cannot stand. */
export const unrecordedAnswer = (response: DecisionAnswer): DecisionAnswer => {
  const closed = failClosed("The decision could not be recorded; the action is deferred.", {
    trace_id: response.trace_id
  })
  return {
    ...response,
    effect: closed.effect,
    domain: closed.domain,
    reason: closed.reason,
    findings: closed.findings,
    transformed_value: null,
    approval: null,
    status: closed.status
  }
}
