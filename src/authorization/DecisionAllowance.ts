/**
 * How much of the API thread one workspace's decisions may hold. Matching is synchronous: a decision
 * at the content cap, for a workspace at its policy and regex limits, holds the thread for about a
 * second (docs/BENCHMARKS.md, "The heaviest decision"), and a workspace sending such decisions
 * back to back would hold up every other workspace's. So a decision whose matching took longer than
 * CHARGED_ABOVE_MS is a debt of its workspace, paid back at DECISION_MS_PER_SECOND_PER_WORKSPACE
 * (src/platform/WorkMeters.ts). While the debt is past BURST_MS, the workspace's decisions fail
 * closed (`defer`, finding `system:fail_closed` naming the setting) without matching. The burst is
 * short on purpose: it is how long one workspace may hold the thread before the others get it back.
 * Ordinary decisions (milliseconds) are never charged, so only a workspace sending heavy decisions
 * faster than the payback can ever wait. And no one decision holds the thread for longer than
 * DECISION_MATCH_MS: matching past it stops (MatchDeadline.ts) and the decision fails closed, so the
 * others wait at most that long for any one. Many workspaces sending heavy decisions at once could still
 * fill the thread between them, so all heavy decisions together are also a debt of the service, paid
 * back at DECISION_MS_PER_SECOND: while it is past BURST_MS, the workspaces whose decisions were charged
 * in the last HEAVY_RECENTLY_MS fail closed the same way, and the others are matched as before.
 */
import { MatchDeadlinePassed, withinMatchDeadline } from "../catalog/MatchDeadline.js"
import { makeSharedAllowance } from "../platform/WorkMeters.js"
import { failClosed } from "./Decisions.js"
import type { Decision } from "./Pipeline.js"

/** Matching shorter than this charges nothing: ordinary decisions never touch a meter. */
export const CHARGED_ABOVE_MS = 25
/** The debt a workspace may run up before its decisions wait: two seconds of the thread. */
export const BURST_MS = 2_000

/**
 * `evaluate`'s decision when its matching ends within `matchMillis`; else a fail-closed defer. Live
 * decisions and their impact replays both decide through it, so a replay reproduces a cut decision.
 * Matching that throws anything else (a bug, or an engine limit such as a regex's stack on a text of
 * megabytes) fails closed too, naming only the error's kind: a guardrail that cannot decide defers, it
 * neither answers 500 nor lets the action through.
 */
export const decideWithin = (
  matchMillis: number,
  evaluate: () => Decision,
  /** Told of an error other than the deadline (to log it: the answer names only its kind). */
  onError: (error: unknown) => void = () => {}
): Decision => {
  try {
    return withinMatchDeadline(matchMillis, evaluate)
  } catch (error) {
    if (!(error instanceof MatchDeadlinePassed)) {
      onError(error)
      return failClosed("This event could not be matched (an internal error); deferred unmatched", {
        failure: "decision_failed",
        error: error instanceof Error ? error.name : typeof error
      })
    }
    return failClosed(
      `Matching this event took longer than one decision may (DECISION_MATCH_MS, ${matchMillis} ms): deferred unmatched; send shorter content, or fewer policies apply`,
      { failure: "decision_time_exceeded", limit_ms: matchMillis }
    )
  }
}

/** How recently a workspace's decisions were charged for it to wait while the service is past its allowance. */
export const HEAVY_RECENTLY_MS = 10_000

export interface DecisionLimits {
  /** DECISION_MS_PER_SECOND_PER_WORKSPACE */
  readonly perWorkspace: number
  /** DECISION_MS_PER_SECOND */
  readonly perService: number
  /** DECISION_MATCH_MS */
  readonly matchMillis: number
}

export const makeDecisionAllowance = (limits: DecisionLimits, onError?: (error: unknown) => void) => {
  const allowance = makeSharedAllowance({
    perKey: limits.perWorkspace,
    keyBurst: BURST_MS,
    perService: limits.perService,
    serviceBurst: BURST_MS,
    recentMillis: HEAVY_RECENTLY_MS
  })

  /** The fail-closed defer for a workspace that must wait (undefined: it may be matched). */
  const waiting = (workspaceId: string): Decision | undefined => {
    const wait = allowance.waitFor(workspaceId)
    if (wait === undefined) return undefined
    return wait.scope === "key"
      ? failClosed(
          `This workspace's recent decisions held the service for longer than they may (DECISION_MS_PER_SECOND_PER_WORKSPACE): deferred without matching; retry in ${wait.seconds} s, or send shorter content`,
          { failure: "decision_allowance_exceeded", retry_after_seconds: wait.seconds }
        )
      : failClosed(
          `Heavy decisions of several workspaces, this one's among them, held the service for longer than they may (DECISION_MS_PER_SECOND): deferred without matching; retry in ${wait.seconds} s, or send shorter content`,
          { failure: "service_allowance_exceeded", retry_after_seconds: wait.seconds }
        )
  }

  /** `evaluate`'s decision, or a fail-closed defer while the workspace must wait or past matchMillis. */
  return (workspaceId: string, evaluate: () => Decision): Decision => {
    const refusal = waiting(workspaceId)
    if (refusal !== undefined) return refusal
    const began = performance.now()
    const decision = decideWithin(limits.matchMillis, evaluate, onError)
    const spent = performance.now() - began
    if (spent > CHARGED_ABOVE_MS) allowance.charge(workspaceId, spent, Date.now())
    return decision
  }
}
