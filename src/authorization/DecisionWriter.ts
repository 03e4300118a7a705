/**
 * Group commit for decisions: every decision's trace, receipt and
 * `decisions` event must be durable before its answer, but one transaction
 * per request caps throughput at the database's commit rate. Requests hand
 * their records to one writer fiber, which commits whatever has queued up
 * (up to MAX_BATCH) in a single transaction and then releases every waiting
 * request; a failed batch is retried record by record, so one bad record
 * fails only its own request.
 */
import { SqlClient } from "@effect/sql"
import { Deferred, Effect, Queue } from "effect"
import { Outbox, type OutboxEvent } from "../platform/Outbox.js"
import { transactionOf } from "../platform/Sql.js"
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

type Pending = readonly [DecisionRecord, Deferred.Deferred<boolean>]

export class DecisionWriter extends Effect.Service<DecisionWriter>()("authorization/DecisionWriter", {
  scoped: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const transaction = transactionOf(sql)
    const traces = yield* Traces
    const outbox = yield* Outbox
    const queue = yield* Effect.acquireRelease(Queue.unbounded<Pending>(), Queue.shutdown)

    const commit = (records: ReadonlyArray<DecisionRecord>) =>
      transaction(
        Effect.gen(function* () {
          yield* traces.record(records.map((record) => record.trace))
          yield* sql`insert into receipts ${sql.insert(
            records.map(({ receipt }) => ({
              id: receipt.id,
              workspace_id: receipt.workspaceId,
              trace_id: receipt.traceId,
              jws: receipt.jws
            }))
          )}`.pipe(Effect.orDie)
          yield* outbox.enqueue(records.map((record) => record.event)).pipe(Effect.orDie)
        })
      ).pipe(
        Effect.as(true),
        Effect.catchAllCause((cause) =>
          Effect.logError("decisions could not be recorded", cause).pipe(Effect.as(false))
        )
      )

    const writeBatch = (batch: ReadonlyArray<Pending>) =>
      Effect.gen(function* () {
        const committed = yield* commit(batch.map(([record]) => record))
        if (committed || batch.length === 1) {
          yield* Effect.forEach(batch, ([, done]) => Deferred.succeed(done, committed), { discard: true })
          return
        }
        yield* Effect.forEach(
          batch,
          ([record, done]) => Effect.flatMap(commit([record]), (ok) => Deferred.succeed(done, ok)),
          {
            discard: true
          }
        )
      })

    yield* Queue.takeBetween(queue, 1, MAX_BATCH).pipe(
      Effect.flatMap((chunk) => writeBatch([...chunk])),
      Effect.forever,
      Effect.forkScoped
    )

    /** Answers once the record is committed (true) or could not be (false). */
    const write = (record: DecisionRecord) =>
      Effect.flatMap(Deferred.make<boolean>(), (done) =>
        Queue.offer(queue, [record, done]).pipe(Effect.zipRight(Deferred.await(done)))
      )

    return { write }
  }),
  dependencies: [Traces.Default]
}) {}
