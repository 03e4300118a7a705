/**
 * Passing a target's output through the guardrails: the reply as a `reply`
 * action, each tool call as an action named after the tool, its params
 * labelled with the origin of any value the attacker planted (so param and
 * flow checkers see where it came from). What survives (permitted, or
 * rewritten) is what reached the user; that is what the judge reads.
 *
 * Two deciders: `liveDecider` runs the real pipeline (`POST /v1/events`'s
 * service, one trace per decision) for jobs; `inMemoryDecider` evaluates the
 * agent's enabled policies plus extra compiled candidates without writing
 * anything, for hardening verification.
 */
import { Effect } from "effect"
import type { AgentProfile } from "../catalog/Agents.js"
import type { CompiledPolicy } from "../catalog/PolicyLanguage.js"
import type { Snapshot } from "../catalog/Snapshot.js"
import { Authorization } from "../authorization/Authorization.js"
import { allCheckers } from "../authorization/checkers/index.js"
import { type CheckerMode, type CheckerName, decide, type ParamSource, type ProposedAction } from "../authorization/Pipeline.js"
import type { Caller } from "../identity/Authentication.js"
import type { TargetReply, ToolCall } from "./DemoAgent.js"
import type { Output } from "./Judge.js"
import type { AttackCase } from "./Techniques.js"

export interface GuardDecision {
  readonly effect: "permit" | "deny" | "defer" | "rewrite"
  readonly reason: string
  readonly transformed_value: string | null
  readonly trace_id: string | null
}

export type Decider<E> = (action: ProposedAction) => Effect.Effect<GuardDecision, E>

export interface GuardedOutput {
  readonly output: Output
  readonly reply_decision: GuardDecision
  readonly tool_decisions: ReadonlyArray<{ readonly call: ToolCall; readonly decision: GuardDecision }>
  /** A deny or defer stopped something (a rewrite alone does not count). */
  readonly stopped: boolean
  /** The decision that stopped or changed something, else the reply's. */
  readonly deciding: GuardDecision
}

const stops = (decision: GuardDecision) => decision.effect === "deny" || decision.effect === "defer"

/** Where each planted value sits in a tool call's params (paths of string leaves). */
const plantedSources = (args: unknown, attack: Pick<AttackCase, "injected" | "channel" | "case_id">) => {
  const sources: Array<ParamSource> = []
  const walk = (value: unknown, path: string) => {
    if (typeof value === "string") {
      const lower = value.toLowerCase()
      if (attack.injected.some((planted) => lower.includes(planted.toLowerCase()))) {
        sources.push({ path, origin: attack.channel, source_id: attack.case_id })
      }
    } else if (Array.isArray(value)) value.forEach((item, i) => walk(item, path === "" ? `${i}` : `${path}.${i}`))
    else if (typeof value === "object" && value !== null) {
      for (const [key, item] of Object.entries(value)) walk(item, path === "" ? key : `${path}.${key}`)
    }
  }
  walk(args, "")
  return sources
}

export const guardOutput = <E>(
  decider: Decider<E>,
  answer: TargetReply,
  attack: Pick<AttackCase, "injected" | "channel" | "case_id">
): Effect.Effect<GuardedOutput, E> =>
  Effect.gen(function* () {
    const replyDecision = yield* decider({ operation: "reply", content: answer.reply })
    const toolDecisions = yield* Effect.forEach(answer.tool_calls, (call) => {
      const sources = plantedSources(call.arguments, attack)
      return Effect.map(
        decider({ operation: call.name, params: call.arguments, ...(sources.length > 0 ? { sources } : {}) }),
        (decision) => ({ call, decision })
      )
    })
    const reply = stops(replyDecision)
      ? ""
      : replyDecision.effect === "rewrite" && replyDecision.transformed_value !== null
        ? replyDecision.transformed_value
        : answer.reply
    const intervened = [replyDecision, ...toolDecisions.map((entry) => entry.decision)].find(
      (decision) => decision.effect !== "permit"
    )
    return {
      output: { reply, tool_calls: toolDecisions.filter((entry) => !stops(entry.decision)).map((entry) => entry.call) },
      reply_decision: replyDecision,
      tool_decisions: toolDecisions,
      stopped: stops(replyDecision) || toolDecisions.some((entry) => stops(entry.decision)),
      deciding: intervened ?? replyDecision
    }
  })

/** The real pipeline, for the job's agent in the job's environment; every decision leaves a trace. */
export const liveDecider = (
  authorization: Authorization,
  job: { readonly id: string; readonly workspace_id: string; readonly environment_id: string },
  agentId: string,
  sessionId: string
): Decider<unknown> => {
  const caller: Caller = {
    kind: "user",
    principalId: `redteam:${job.id}`,
    userId: null,
    apiKeyId: null,
    workspaceId: job.workspace_id,
    environmentId: null,
    role: "member"
  }
  return (action) =>
    authorization
      .authorize(caller, {
        kind: "output.proposed",
        principal: { agent_id: agentId, environment_id: job.environment_id, workspace_id: job.workspace_id },
        action,
        session_id: sessionId,
        metadata: { source: "redteam", job_id: job.id }
      })
      .pipe(
        Effect.map((response) => ({
          effect: response.effect,
          reason: response.reason,
          transformed_value: response.transformed_value,
          trace_id: response.trace_id
        }))
      )
}

export interface RuntimeModes {
  readonly modes: Readonly<Record<CheckerName, CheckerMode>>
  readonly defaultEffect: "permit" | "deny" | "defer"
}

/** The agent's enabled guardrails plus `extra` (candidates), evaluated in memory: no trace, no write. */
export const inMemoryDecider =
  (snapshot: Snapshot, agentId: string, runtime: RuntimeModes, extra: ReadonlyArray<CompiledPolicy>): Decider<never> =>
  (action) =>
    Effect.sync(() => {
      const decision = decide(
        {
          agentId,
          kind: "output.proposed",
          action,
          agent: snapshot.agents.get(agentId) as AgentProfile | undefined,
          policies: [
            ...snapshot.policies.filter((policy) => policy.ownerAgentId === null || policy.ownerAgentId === agentId),
            ...extra
          ],
          labelPolicies: snapshot.labelPolicies,
          tools: snapshot.tools,
          granted: false
        },
        allCheckers,
        runtime.modes,
        runtime.defaultEffect
      )
      return {
        effect: decision.effect,
        reason: decision.reason,
        transformed_value: decision.transformed_value,
        trace_id: null
      }
    })
