/**
 * Keeps each run's decision counters current from the `decisions` topic:
 * trace_count, blocked_count (deny), rewritten_count (rewrite),
 * escalated_count (status escalated) and p95_latency_ms (over the run's
 * traces). Applied once per decision (effect-once consumer), summed per
 * run within a batch.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import { DecisionMessage } from "../authorization/Domain.js"
import { consumeStream, decodeDelivery } from "../platform/Consumer.js"
import { Topics } from "../platform/Topics.js"

const decodeDecision = decodeDelivery(DecisionMessage)

interface RunTally {
  readonly workspaceId: string
  readonly runId: string
  traces: number
  blocked: number
  rewritten: number
  escalated: number
}

/** A batch's decisions summed per run (decisions outside a run count for none). */
const tallyByRun = (decisions: ReadonlyArray<typeof DecisionMessage.Type>) => {
  const tallies = new Map<string, RunTally>()
  for (const decision of decisions) {
    if (decision.run_id === null) continue
    const { workspace_id: workspaceId, run_id: runId, effect, status } = decision
    const key = `${workspaceId}|${runId}`
    const tally = tallies.get(key) ?? { workspaceId, runId, traces: 0, blocked: 0, rewritten: 0, escalated: 0 }
    tally.traces += 1
    if (effect === "deny") tally.blocked += 1
    if (effect === "rewrite") tally.rewritten += 1
    if (status === "escalated") tally.escalated += 1
    tallies.set(key, tally)
  }
  return tallies.values()
}

export const RunCountersLive = Layer.scopedDiscard(
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    // One update per run per batch (the p95 is recomputed once, over the run's traces).
    yield* consumeStream({
      group: "run-counters",
      topics: [Topics.decisions],
      // A decision that does not decode is dead-lettered with the reason (Consumer.ts).
      apply: (batch) =>
        Effect.flatMap(Effect.forEach(batch, decodeDecision), (decisions) =>
          Effect.forEach(
            tallyByRun(decisions),
            (tally) =>
              sql`update runs set
                  trace_count = trace_count + ${tally.traces},
                  blocked_count = blocked_count + ${tally.blocked},
                  rewritten_count = rewritten_count + ${tally.rewritten},
                  escalated_count = escalated_count + ${tally.escalated},
                  p95_latency_ms = coalesce((select percentile_disc(0.95) within group (order by elapsed_ms)
                                             from traces where workspace_id = ${tally.workspaceId}
                                             and run_id = ${tally.runId}), 0),
                  updated_at = now()
                where workspace_id = ${tally.workspaceId} and id = ${tally.runId}`,
            { discard: true }
          )
        )
    }).pipe(Effect.forkScoped)
  })
)
