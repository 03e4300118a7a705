/**
 * `POST /v1/events`: checks a proposed event against the workspace's
 * in-memory catalog snapshot and answers a decision, signed as a receipt,
 * with its trace committed (trace, receipt and `decisions` event in one
 * transaction) before the answer. Anything that goes wrong while deciding
 * fails closed: effect `defer`, with a finding saying why, never a 500.
 */
import { SqlClient } from "@effect/sql"
import { Cause, Duration, Effect, Option, Schema } from "effect"
import { createHash } from "node:crypto"
import type { AgentProfile } from "../catalog/Agents.js"
import { CatalogSnapshot, type Snapshot } from "../catalog/Snapshot.js"
import type { Caller } from "../identity/Authentication.js"
import { WorkspaceSettings } from "../identity/WorkspaceSettings.js"
import { Forbidden, NotFound } from "../platform/Errors.js"
import { prefixedId } from "../platform/Ids.js"
import { Topics } from "../platform/Topics.js"
import { TraceId } from "../runs/Domain.js"
import { allCheckers } from "./checkers/index.js"
import { DecisionWriter } from "./DecisionWriter.js"
import { notifyEscalation } from "./Escalations.js"
import { DecisionMessage } from "./Domain.js"
import { type CheckerMode, type CheckerName, type Decision, decide, type ProposedAction } from "./Pipeline.js"
import { canonicalJson, ReceiptSigner } from "./Receipts.js"
import { recordDecision } from "../operations/Metrics.js"
import { decisionDetails, logDecisionDetails } from "../operations/Telemetry.js"
import { keepTracePayload } from "../privacy/Payloads.js"
import { keepJson } from "../privacy/Redaction.js"

export interface ProposedEventInput {
  readonly kind: "output.proposed"
  readonly principal: { readonly agent_id: string; readonly environment_id: string; readonly workspace_id: string }
  readonly action: ProposedAction
  readonly run_id?: string | undefined
  readonly run_event_id?: string | undefined
  readonly session_id?: string | undefined
  readonly metadata?: unknown
}

const RUNTIME_CONFIG_TTL = Duration.seconds(1)

const encodeDecisionMessage = Schema.encodeSync(DecisionMessage)

/** `metadata.workflow_step` of a proposed event, when it is a string (an analytics dimension). */
const workflowStepOf = (metadata: unknown): string | null => {
  const step = typeof metadata === "object" && metadata !== null ? (metadata as Record<string, unknown>)["workflow_step"] : undefined
  return typeof step === "string" ? step : null
}

/** The same agent proposing the same action in the same environment is the same intent (approval grants bind to it). */
export const intentIdOf = (workspaceId: string, event: ProposedEventInput) =>
  `int_${createHash("sha256")
    .update(canonicalJson({ workspaceId, principal: event.principal, action: event.action }))
    .digest("hex")
    .slice(0, 32)}`

/** A decision made without the checkers: fail closed with the reason as a finding. */
const failClosed = (reason: string, evidence: unknown): Decision => ({
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

export class Authorization extends Effect.Service<Authorization>()("authorization/Authorization", {
  effect: Effect.gen(function* () {
    const snapshots = yield* CatalogSnapshot
    const settings = yield* WorkspaceSettings
    const signer = yield* ReceiptSigner
    const writer = yield* DecisionWriter
    const sql = yield* SqlClient.SqlClient
    const runtimeConfigs = new Map<
      string,
      { readonly until: number; readonly value: Effect.Effect.Success<ReturnType<typeof settings.runtimeConfig>> }
    >()

    const runtimeConfig = (workspaceId: string) =>
      Effect.suspend(() => {
        const cached = runtimeConfigs.get(workspaceId)
        if (cached !== undefined && cached.until > Date.now()) return Effect.succeed(cached.value)
        return Effect.tap(settings.runtimeConfig(workspaceId), (value) =>
          Effect.sync(() =>
            runtimeConfigs.set(workspaceId, { value, until: Date.now() + Duration.toMillis(RUNTIME_CONFIG_TTL) })
          )
        )
      })

    const activeGrant = (workspaceId: string, intentId: string) =>
      sql<{ intent_id: string; granted_by: string; expires_at: Date }>`
        select intent_id, granted_by, expires_at from approval_grants
        where workspace_id = ${workspaceId} and intent_id = ${intentId} and expires_at > now()`.pipe(
        Effect.map((rows) => Option.fromNullable(rows[0]))
      )

    /** A human grants the approval an intent asked for, for `ttlSeconds`. */
    const grant = (
      caller: Caller,
      intentId: string,
      input: { readonly note?: string | undefined; readonly ttl_seconds?: number | undefined }
    ) =>
      sql<{ intent_id: string; granted_by: string; expires_at: Date; created_at: Date }>`
        insert into approval_grants (workspace_id, intent_id, granted_by, note, expires_at)
        values (${caller.workspaceId}, ${intentId}, ${caller.principalId}, ${input.note ?? null},
                now() + make_interval(secs => ${input.ttl_seconds ?? 900}))
        on conflict (workspace_id, intent_id) do update set granted_by = excluded.granted_by, note = excluded.note,
          expires_at = excluded.expires_at, created_at = now()
        returning intent_id, granted_by, expires_at, created_at`.pipe(
        Effect.orDie,
        Effect.map((rows) => ({
          intent_id: rows[0]!.intent_id,
          granted_by: rows[0]!.granted_by,
          expires_at: rows[0]!.expires_at.toISOString(),
          created_at: rows[0]!.created_at.toISOString()
        }))
      )

    const evaluate = (
      snapshot: Snapshot,
      event: ProposedEventInput,
      modes: Readonly<Record<CheckerName, CheckerMode>>,
      granted: boolean,
      defaultEffect: "permit" | "deny" | "defer"
    ) => {
      const agentId = event.principal.agent_id
      return decide(
        {
          agentId,
          action: event.action,
          agent: snapshot.agents.get(agentId) as AgentProfile | undefined,
          policies: snapshot.policies.filter(
            (policy) => policy.ownerAgentId === null || policy.ownerAgentId === agentId
          ),
          labelPolicies: snapshot.labelPolicies,
          tools: snapshot.tools,
          granted
        },
        allCheckers,
        modes,
        defaultEffect
      )
    }

    const authorize = (caller: Caller, event: ProposedEventInput) =>
      Effect.gen(function* () {
        const started = performance.now()
        const { principal } = event
        if (principal.workspace_id !== caller.workspaceId) {
          return yield* new NotFound({
            code: "workspace_not_found",
            message: "principal.workspace_id must be the workspace of your credential."
          })
        }
        if (caller.environmentId !== null && caller.environmentId !== principal.environment_id) {
          return yield* new Forbidden({
            code: "environment_mismatch",
            message: "This runtime key is bound to another environment than principal.environment_id."
          })
        }
        let config = yield* runtimeConfig(caller.workspaceId)
        if (!config.environments.has(principal.environment_id)) {
          // Maybe created since the cached copy was read: look once more before answering 404.
          runtimeConfigs.delete(caller.workspaceId)
          config = yield* runtimeConfig(caller.workspaceId)
        }
        const environment = config.environments.get(principal.environment_id)
        if (environment === undefined) {
          return yield* new NotFound({
            code: "environment_not_found",
            message: `Environment ${principal.environment_id} does not exist in this workspace.`
          })
        }
        const intentId = intentIdOf(caller.workspaceId, event)
        const modes: Record<CheckerName, CheckerMode> = {
          content: "enforce",
          profile: "enforce",
          approval: environment.modes.approval_checker_mode ?? config.settings.approval_checker_mode,
          flow: environment.modes.flow_checker_mode ?? config.settings.flow_checker_mode,
          memory: environment.modes.memory_checker_mode ?? config.settings.memory_checker_mode,
          param: environment.modes.param_checker_mode ?? config.settings.param_checker_mode
        }
        const evaluated = yield* Effect.gen(function* () {
          const snapshot = yield* snapshots.get(caller.workspaceId)
          const tool = snapshot.tools.get(event.action.operation)
          const needsGrant =
            tool !== undefined &&
            modes.approval !== "off" &&
            Boolean((tool.metadata as { approval?: unknown }).approval)
          const grantRow = needsGrant ? yield* activeGrant(caller.workspaceId, intentId) : Option.none()
          return {
            decision: evaluate(snapshot, event, modes, Option.isSome(grantRow), config.settings.default_action),
            grantRow
          }
        }).pipe(
          Effect.catchAllCause((cause) =>
            Effect.logError("authorization failed closed", cause).pipe(
              Effect.as({
                decision: failClosed("The guardrail registry could not be read; the action is deferred.", {
                  failure: Cause.pretty(cause).split("\n")[0]
                }),
                grantRow: Option.none<{ intent_id: string; granted_by: string; expires_at: Date }>()
              })
            )
          )
        )
        const { decision, grantRow } = evaluated
        const appliedGrant = Option.match(grantRow, {
          onNone: () => null,
          onSome: (row) => ({
            intent_id: row.intent_id,
            granted_by: row.granted_by,
            expires_at: row.expires_at.toISOString()
          })
        })
        const traceId = prefixedId("trc")
        const receiptId = prefixedId("rcpt")
        const issuedAt = new Date().toISOString()
        const receiptContent = {
          receipt_id: receiptId,
          trace_id: traceId,
          intent_id: intentId,
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
          issued_at: issuedAt
        }
        const jws = yield* signer.sign(receiptContent)
        const latencyMs = Math.round(performance.now() - started)
        const response = {
          effect: decision.effect,
          domain: decision.domain,
          reason: decision.reason,
          intent_id: intentId,
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
        const recorded = yield* writer.write({
          trace: {
            id: traceId,
            workspaceId: caller.workspaceId,
            agentId: principal.agent_id,
            environmentId: principal.environment_id,
            environment: environment.slug,
            runId: event.run_id ?? null,
            runEventId: event.run_event_id ?? null,
            sessionId: event.session_id ?? null,
            intentId,
            receiptId,
            decision: decision.effect,
            domain: decision.domain,
            elapsedMs: latencyMs,
            // Decided on the raw content; stored as the workspace's data_handling_mode allows.
            payload: keepTracePayload(config.settings.data_handling_mode, {
              request: { action: event.action, metadata: event.metadata ?? null },
              response
            })
          },
          receipt: { id: receiptId, workspaceId: caller.workspaceId, traceId, jws },
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
                policy_ids: decision.findings.flatMap((finding) =>
                  finding.policy_id === null ? [] : [finding.policy_id]
                ),
                workflow_step: workflowStepOf(event.metadata),
                latency_ms: latencyMs,
                decided_at: issuedAt
              }),
              // telemetry_enabled: the decision's reason and findings travel on the operator-facing topic.
              ...decisionDetails(config.settings, decision)
            }
          }
        })
        yield* recordDecision(recorded ? decision.effect : "defer")
        yield* logDecisionDetails(config.settings, traceId, decision)
        if (!recorded) {
          // Without a durable trace the decision cannot stand: fail closed.
          const closed = failClosed("The decision could not be recorded; the action is deferred.", {
            trace_id: traceId
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
        const webhook = config.settings.escalation_webhook_url
        if (decision.status === "escalated" && webhook !== null) {
          yield* notifyEscalation(webhook, {
            type: "decision.escalated",
            trace_id: traceId,
            receipt_id: receiptId,
            workspace_id: caller.workspaceId,
            agent_id: principal.agent_id,
            environment_id: principal.environment_id,
            reason: decision.reason,
            findings: decision.findings.map(({ policy_id, requirement_id }) => ({ policy_id, requirement_id })),
            decided_at: issuedAt
          })
        }
        return response
      })

    const receipt = (workspaceId: string, id: string) =>
      sql<{ jws: string; trace_id: string; created_at: Date }>`
        select jws, trace_id, created_at from receipts where workspace_id = ${workspaceId} and id = ${id}`.pipe(
        Effect.orDie,
        Effect.flatMap((rows) =>
          Option.match(Option.fromNullable(rows[0]), {
            onNone: () =>
              Effect.fail(new NotFound({ code: "receipt_not_found", message: `No receipt ${id} in this workspace.` })),
            onSome: (row) =>
              Effect.succeed({
                receipt_id: id,
                trace_id: row.trace_id,
                jws: row.jws,
                created_at: row.created_at.toISOString()
              })
          })
        )
      )

    return { authorize, receipt, grant, jwks: signer.jwks }
  }),
  dependencies: [ReceiptSigner.Default, DecisionWriter.Default]
}) {}
