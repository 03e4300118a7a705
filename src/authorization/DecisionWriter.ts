/**
 * Group commit for decisions: every decision's trace, receipt and
 * `decisions` event must be durable before its answer, but one transaction
 * per request caps throughput at the database's commit rate. Requests hand
 * their records to one writer fiber, which commits whatever has queued up
 * (up to MAX_BATCH) in a single transaction and then releases every waiting
 * request; a failed batch is retried record by record, so one bad record
 * fails only its own request. The batch is one statement (traces, receipts
 * and outbox rows as `with` clauses): one round trip, atomic on its own.
 */
import { SqlClient } from "@effect/sql"
import { Deferred, Effect, Exit, Queue } from "effect"
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

/** A queued record and what to tell its request: committed (true) or not (false). */
type Pending = readonly [DecisionRecord, (committed: boolean) => void]

export class DecisionWriter extends Effect.Service<DecisionWriter>()("authorization/DecisionWriter", {
  scoped: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const traces = yield* Traces
    const outbox = yield* Outbox
    const queue = yield* Effect.acquireRelease(Queue.unbounded<Pending>(), Queue.shutdown)

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
        Effect.as(true),
        Effect.catchAllCause((cause) =>
          Effect.logError("decisions could not be recorded", cause).pipe(Effect.as(false))
        )
      )

    /** Tells a request its outcome; a callback that throws must not stop the writer. */
    const tell = (done: Pending[1], committed: boolean) =>
      Effect.try(() => done(committed)).pipe(
        Effect.catchAll((error) => Effect.logError("a decision's answer could not be sent", error))
      )

    const writeBatch = (batch: ReadonlyArray<Pending>) =>
      Effect.gen(function* () {
        const committed = yield* commit(batch.map(([record]) => record))
        if (committed || batch.length === 1) {
          for (const [, done] of batch) yield* tell(done, committed)
          return
        }
        yield* Effect.forEach(batch, ([record, done]) => Effect.flatMap(commit([record]), (ok) => tell(done, ok)), {
          discard: true
        })
      })

    yield* Queue.takeBetween(queue, 1, MAX_BATCH).pipe(
      Effect.flatMap((chunk) => writeBatch([...chunk])),
      Effect.forever,
      Effect.forkScoped
    )

    /** Answers once the record is committed (true) or could not be (false). */
    const write = (record: DecisionRecord) =>
      Effect.flatMap(Deferred.make<boolean>(), (done) =>
        Queue.offer(queue, [record, (committed) => Deferred.unsafeDone(done, Exit.succeed(committed))]).pipe(
          Effect.zipRight(Deferred.await(done))
        )
      )

    /** `write` for callers outside Effect (the direct path): `done` is called when the batch commits (or fails). */
    const enqueue = (record: DecisionRecord, done: (committed: boolean) => void) => {
      if (!Queue.unsafeOffer(queue, [record, done])) done(false)
    }

    return { write, enqueue }
  }),
  dependencies: [Traces.Default]
}) {}
