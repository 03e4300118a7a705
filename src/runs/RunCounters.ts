/**
 * Keeps each run's decision counters current from the `decisions` topic:
 * trace_count, blocked_count (deny), rewritten_count (rewrite),
 * escalated_count (status escalated) and p95_latency_ms. Applied once per
 * decision (effect-once consumer), summed per run within a batch.
 *
 * The p95 is read from the run's latency sketch (src/analytics/Sketch.ts,
 * the analytics p95's rule: exact below 16 ms, else at most 10 % + 1 ms
 * above), which each batch merges its decisions into: a batch costs the same
 * however long the run. Recomputing the percentile over all of the run's
 * traces made every batch of a long run read its whole history.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Layer, Schema } from "effect"
import { emptySketch, quantile, record, toPgArray } from "../analytics/Sketch.js"
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
  readonly latencies: Array<number>
  readonly traceIds: Array<string>
}

/** A batch's decisions summed per run (decisions outside a run count for none). */
const tallyByRun = (decisions: ReadonlyArray<typeof DecisionMessage.Type>) => {
  const tallies = new Map<string, RunTally>()
  for (const decision of decisions) {
    if (decision.run_id === null) continue
    const { workspace_id: workspaceId, run_id: runId, effect, status } = decision
    const key = `${workspaceId}|${runId}`
    const tally = tallies.get(key) ?? {
      workspaceId,
      runId,
      traces: 0,
      blocked: 0,
      rewritten: 0,
      escalated: 0,
      latencies: [],
      traceIds: []
    }
    tally.traces += 1
    if (effect === "deny") tally.blocked += 1
    if (effect === "rewrite") tally.rewritten += 1
    if (status === "escalated") tally.escalated += 1
    tally.latencies.push(decision.latency_ms)
    tally.traceIds.push(decision.trace_id)
    tallies.set(key, tally)
  }
  return [...tallies.values()]
}

/** A batch's runs, locked; `latency_sketch` (bigint[]) as its text literal, null before the run's first count. */
const LockedRun = Schema.Struct({
  workspace_id: Schema.String,
  id: Schema.String,
  trace_count: Schema.Number,
  latency_sketch: Schema.NullOr(Schema.String)
})
/** Rows that do not decode are a defect (the statement's own failure keeps its error channel). */
const rowsOf = <A, I>(schema: Schema.Schema<A, I>) => {
  const decode = Schema.decodeUnknown(schema)
  return (rows: ReadonlyArray<unknown>) => Effect.orDie(decode(rows))
}
const lockedRuns = rowsOf(Schema.Array(LockedRun))
const latencyRows = rowsOf(Schema.Array(Schema.Struct({ elapsed_ms: Schema.Number })))

const sketchOf = (literal: string) =>
  literal.length <= 2 ? emptySketch() : literal.slice(1, -1).split(",").map(Number)

export const RunCountersLive = Layer.scopedDiscard(
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    // A run counted before its sketch existed starts from its traces (once), but for this batch's own.
    const seed = (tally: RunTally) =>
      sql`select elapsed_ms from traces where workspace_id = ${tally.workspaceId} and run_id = ${tally.runId}
          and id not in ${sql.in(tally.traceIds)}`.pipe(
        Effect.flatMap(latencyRows),
        Effect.map((rows) => rows.reduce((sketch, row) => record(sketch, row.elapsed_ms), emptySketch()))
      )

    const count = (tallies: ReadonlyArray<RunTally>) =>
      Effect.gen(function* () {
        if (tallies.length === 0) return
        const keys = JSON.stringify(tallies.map((tally) => ({ workspace_id: tally.workspaceId, id: tally.runId })))
        const locked = yield* sql`
          select r.workspace_id, r.id, r.trace_count, r.latency_sketch::text as latency_sketch
          from runs r join jsonb_to_recordset(${keys}::jsonb) as k(workspace_id text, id text)
            on r.workspace_id = k.workspace_id and r.id = k.id
          order by r.workspace_id, r.id -- the order run-event appends lock runs in (Repo.ts lockAndBump)
          for update of r`.pipe(Effect.flatMap(lockedRuns))
        const byKey = new Map(locked.map((run) => [`${run.workspace_id}|${run.id}`, run]))
        for (const tally of tallies) {
          const run = byKey.get(`${tally.workspaceId}|${tally.runId}`)
          if (run === undefined) continue // no such run in that workspace: the decision counts for none
          const sketch =
            run.latency_sketch !== null
              ? sketchOf(run.latency_sketch)
              : run.trace_count > 0
                ? yield* seed(tally)
                : emptySketch()
          for (const latency of tally.latencies) record(sketch, latency)
          yield* sql`update runs set
              trace_count = trace_count + ${tally.traces},
              blocked_count = blocked_count + ${tally.blocked},
              rewritten_count = rewritten_count + ${tally.rewritten},
              escalated_count = escalated_count + ${tally.escalated},
              latency_sketch = ${toPgArray(sketch)}::bigint[],
              p95_latency_ms = ${quantile(sketch, 0.95)},
              updated_at = now()
            where workspace_id = ${tally.workspaceId} and id = ${tally.runId}`
        }
      })

    // Two statements per batch and one per run in it, each the same size however long the run.
    yield* consumeStream({
      group: "run-counters",
      topics: [Topics.decisions],
      // A decision that does not decode is dead-lettered with the reason (Consumer.ts).
      apply: (batch) =>
        Effect.flatMap(Effect.forEach(batch, decodeDecision), (decisions) => count(tallyByRun(decisions)))
    }).pipe(Effect.forkScoped)
  })
)
