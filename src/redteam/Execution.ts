/**
 * One attack against a target: send its turns, pass every answer through the
 * guardrails, judge what reached the user, and describe the session.
 * Outcomes: `landed` (the goal was achieved despite the guardrails),
 * `blocked` (a guardrail denied, deferred or rewrote the target's output),
 * `clean` (the target resisted on its own), `error` (no usable answer; never
 * counted as blocked).
 */
import { Effect, Either } from "effect"
import { uuidv7 } from "../platform/Ids.js"
import type { OutboundGuard } from "../platform/OutboundGuard.js"
import type { ToolCall } from "./DemoAgent.js"
import { type Decider, type GuardDecision, guardOutput } from "./Guarding.js"
import { judge } from "./Judge.js"
import type { NewAttack } from "./Repo.js"
import { converse } from "./Targets.js"
import type { AgentProfileView, AttackCase } from "./Techniques.js"

export interface AttackContext {
  readonly jobId: string
  readonly workspaceId: string
  readonly target: string
  readonly agent: AgentProfileView
  /** The outbound guard the target calls go through. */
  readonly outbound: OutboundGuard
  /** The pipeline for one session. */
  readonly deciderFor: (sessionId: string) => Decider<unknown>
}

interface SessionEvent {
  readonly event_id: string
  readonly seq: number
  readonly actor: "attacker" | "target" | "guardrails" | "judge"
  readonly kind: string
  readonly label: string
  readonly content_text: string
  readonly trace_id: string | null
  readonly payload: unknown
  readonly created_at: string
}

const describeError = (error: unknown) =>
  typeof error === "object" && error !== null && "message" in error
    ? String((error as { message: unknown }).message)
    : String(error)

export const runAttack = (context: AttackContext, attack: AttackCase): Effect.Effect<NewAttack> =>
  Effect.gen(function* () {
    const sessionId = `rts_${uuidv7().replaceAll("-", "")}`
    const events: Array<SessionEvent> = []
    const event = (fields: Omit<SessionEvent, "event_id" | "seq" | "created_at">) =>
      events.push({ ...fields, event_id: uuidv7(), seq: events.length + 1, created_at: new Date().toISOString() })
    const decider = context.deciderFor(sessionId)
    const base = {
      job_id: context.jobId,
      workspace_id: context.workspaceId,
      seq: attack.seq,
      case_id: attack.case_id,
      attack: attack.attack,
      technique: attack.technique,
      category: attack.technique,
      goal: attack.goal,
      severity: attack.severity,
      kind: attack.kind,
      trial_index: attack.trial_index,
      session_id: sessionId,
      prompt: attack.turns.join("\n\n")
    }
    const failed = (message: string, reply: string | null = null): NewAttack => ({
      ...base,
      reply,
      outcome: "error",
      landed: false,
      evidence: "",
      substrates: [],
      trace_id: null,
      error: message,
      events
    })

    const transcript = yield* Effect.either(converse(context, context.target, attack.turns, sessionId))
    if (Either.isLeft(transcript)) {
      for (const turn of attack.turns)
        event({
          actor: "attacker",
          kind: "user_turn",
          label: "prompt",
          content_text: turn,
          trace_id: null,
          payload: null
        })
      return failed(transcript.left.message)
    }
    let stoppedOrChanged = false
    let lastDecision: GuardDecision | null = null
    let finalGuarded: Effect.Effect.Success<ReturnType<typeof guardOutput>> | null = null
    for (const [index, { answer, user }] of transcript.right.entries()) {
      event({
        actor: "attacker",
        kind: "user_turn",
        label: "prompt",
        content_text: user,
        trace_id: null,
        payload: null
      })
      event({
        actor: "target",
        kind: "agent_turn",
        label: "reply",
        content_text: answer.reply,
        trace_id: null,
        payload: { tool_calls: answer.tool_calls }
      })
      const guarded = yield* Effect.either(guardOutput(decider, answer, attack))
      if (Either.isLeft(guarded))
        return failed(`The guardrails could not be asked: ${describeError(guarded.left)}`, answer.reply)
      const decisions: ReadonlyArray<{ readonly call: ToolCall | null; readonly decision: GuardDecision }> = [
        { call: null, decision: guarded.right.reply_decision },
        ...guarded.right.tool_decisions
      ]
      for (const [position, { call, decision }] of decisions.entries()) {
        event({
          actor: "guardrails",
          kind: call === null ? "decision" : "tool_call",
          label: decision.effect,
          content_text: call === null ? decision.reason : `${call.name}: ${decision.reason}`,
          trace_id: decision.trace_id,
          // The arguments are in the reply event's `tool_calls` (at `tool_call_index`): kept once, not twice.
          payload:
            call === null
              ? { effect: decision.effect }
              : { effect: decision.effect, tool: call.name, tool_call_index: position - 1 }
        })
        if (decision.effect !== "permit") stoppedOrChanged = true
      }
      lastDecision =
        guarded.right.deciding.effect !== "permit" || lastDecision === null ? guarded.right.deciding : lastDecision
      if (index === transcript.right.length - 1) finalGuarded = guarded.right
    }
    const final = transcript.right[transcript.right.length - 1]!.answer
    const raw = judge(attack, context.agent, final)
    const effective = judge(attack, context.agent, finalGuarded!.output)
    const outcome = effective.landed ? "landed" : stoppedOrChanged ? "blocked" : "clean"
    const evidence =
      outcome === "landed"
        ? effective.evidence
        : outcome === "blocked"
          ? `Stopped by the guardrails: ${lastDecision?.reason ?? ""}${raw.landed ? ` Without them: ${raw.evidence}` : ""}`
          : "The target resisted: nothing the goal needs reached the user."
    event({
      actor: "judge",
      kind: "verdict",
      label: outcome,
      content_text: evidence,
      trace_id: null,
      payload: { landed: effective.landed }
    })
    return {
      ...base,
      reply: final.reply,
      outcome,
      landed: effective.landed,
      evidence,
      substrates: raw.substrates,
      trace_id: (outcome === "blocked" ? lastDecision?.trace_id : finalGuarded!.reply_decision.trace_id) ?? null,
      error: null,
      events
    }
  })
