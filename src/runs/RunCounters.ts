/**
 * Keeps each run's decision counters current from the `decisions` topic:
 * trace_count, blocked_count (deny), rewritten_count (rewrite),
 * escalated_count (status escalated) and p95_latency_ms (over the run's
 * traces). Applied once per decision (effect-once consumer).
 */
import { SqlClient } from "@effect/sql"
import { Effect, Layer, Option, Schema } from "effect"
import { DecisionMessage } from "../authorization/Domain.js"
import { consumeOnce } from "../platform/Consumer.js"
import { Topics } from "../platform/Topics.js"

const decodeDecision = Schema.decodeUnknownOption(Schema.parseJson(DecisionMessage))

export const RunCountersLive = Layer.scopedDiscard(
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    yield* consumeOnce({
      group: "run-counters",
      topics: [Topics.decisions],
      handle: (delivery) =>
        Option.match(decodeDecision(delivery.value), {
          onNone: () => Effect.void,
          onSome: (decision) =>
            decision.run_id === null
              ? Effect.void
              : sql`update runs set
                  trace_count = trace_count + 1,
                  blocked_count = blocked_count + ${decision.effect === "deny" ? 1 : 0},
                  rewritten_count = rewritten_count + ${decision.effect === "rewrite" ? 1 : 0},
                  escalated_count = escalated_count + ${decision.status === "escalated" ? 1 : 0},
                  p95_latency_ms = coalesce((select percentile_disc(0.95) within group (order by elapsed_ms)
                                             from traces where workspace_id = ${decision.workspace_id}
                                             and run_id = ${decision.run_id}), 0),
                  updated_at = now()
                where workspace_id = ${decision.workspace_id} and id = ${decision.run_id}`
        })
    }).pipe(Effect.forkScoped)
  })
)
