/**
 * Group commit for decisions (src/platform/GroupCommit.ts): every
 * decision's trace, receipt and `decisions` event must be durable before its
 * answer. A batch is one statement (traces, receipts and outbox rows as
 * `with` clauses): one round trip, atomic on its own. A failed batch is
 * retried decision by decision, so one bad record fails only its own request.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { allCommitted, makeGroupCommit } from "../platform/GroupCommit.js"
import { Outbox, type OutboxEvent } from "../platform/Outbox.js"
import { type NewTrace, Traces } from "../runs/Traces.js"

const MAX_BATCH = 500

export interface DecisionRecord {
  readonly trace: NewTrace
  readonly receipt: {
    readonly id: string
    readonly workspaceId: string
    readonly traceId: string
    readonly jws: string
  }
  readonly event: OutboxEvent
}

export class DecisionWriter extends Effect.Service<DecisionWriter>()("authorization/DecisionWriter", {
  scoped: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const traces = yield* Traces
    const outbox = yield* Outbox

    // One statement (so one round trip and its own transaction): the traces, receipts and outbox rows together.
    const commit = (records: ReadonlyArray<DecisionRecord>) =>
      sql`with recorded_traces as (${traces.insertStatement(records.map((record) => record.trace))}),
               recorded_receipts as (insert into receipts ${sql.insert(
                 records.map(({ receipt }) => ({
                   id: receipt.id,
                   workspace_id: receipt.workspaceId,
                   trace_id: receipt.traceId,
                   jws: receipt.jws
                 }))
               )})
          ${outbox.insertStatement(records.map((record) => record.event))}`.pipe(
        Effect.zipRight(outbox.written.fire),
        Effect.as(allCommitted(records))
      )

    return yield* makeGroupCommit({ name: "decision", maxBatch: MAX_BATCH, retryAlone: true, commit })
  }),
  dependencies: [Traces.Default]
}) {}
