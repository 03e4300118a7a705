/**
 * Group commit for gateway calls: each finished call hands its usage event
 * and budget settlement to one writer fiber, which commits whatever has
 * queued up (up to MAX_BATCH) in one transaction: the events through the
 * outbox, the spend and released reservations in one ledger statement. One
 * commit per batch instead of per call keeps the budget rows (one per
 * workspace and window) from serializing traffic on the disk's commit
 * latency. Calls hand over after their response is out, and a batch lingers
 * (LINGER) before it commits, so nothing here is on a client's path. On
 * shutdown the queue is drained before the scope ends.
 */
import { SqlClient } from "@effect/sql"
import { Duration, Effect, Queue, Schedule, Schema } from "effect"
import { Budgets, type Settlement } from "../billing/Budgets.js"
import { LlmUsageMessage } from "../billing/Domain.js"
import { Outbox } from "../platform/Outbox.js"
import { transactionOf } from "../platform/Sql.js"
import { Topics } from "../platform/Topics.js"

const MAX_BATCH = 500
/**
 * How long a batch stays open after its first call. A commit right at the end
 * of a response would hold the budget row (and the event loop) just as the
 * client's next request asks for its reservation; lingering moves the commit
 * into that request's upstream wait, and gathers more calls per commit.
 */
const LINGER = Duration.millis(10)
const encodeUsage = Schema.encodeSync(LlmUsageMessage)

export interface FinishedCall {
  readonly message: LlmUsageMessage
  readonly settlement: Settlement
}

export class UsageWriter extends Effect.Service<UsageWriter>()("gateway/UsageWriter", {
  scoped: Effect.gen(function* () {
    const budgets = yield* Budgets
    const outbox = yield* Outbox
    const transaction = transactionOf(yield* SqlClient.SqlClient)
    const queue = yield* Effect.acquireRelease(Queue.unbounded<FinishedCall>(), Queue.shutdown)

    const commit = (calls: ReadonlyArray<FinishedCall>) =>
      transaction(
        Effect.zipRight(
          outbox.enqueue(
            calls.map((call) => ({
              topic: Topics.llmUsage,
              key: call.message.workspace_id,
              value: encodeUsage(call.message)
            }))
          ),
          budgets.settle(calls.map((call) => call.settlement))
        )
      ).pipe(
        Effect.retry(Schedule.exponential(Duration.millis(50)).pipe(Schedule.intersect(Schedule.recurs(4)))),
        Effect.catchAllCause((cause) =>
          Effect.logError(`${calls.length} gateway usage record(s) could not be written`, cause)
        ),
        Effect.uninterruptible
      )

    // Registered before the writer fiber, so it runs after that fiber is interrupted: nothing queued is lost.
    yield* Effect.addFinalizer(() =>
      Effect.flatMap(Queue.takeAll(queue), (rest) => (rest.length === 0 ? Effect.void : commit([...rest])))
    )
    // Only the wait for a first call is interruptible: a batch once taken is always committed.
    yield* Effect.uninterruptibleMask((restore) =>
      restore(Queue.take(queue)).pipe(
        Effect.zipLeft(Effect.sleep(LINGER)),
        Effect.flatMap((first) =>
          Effect.flatMap(Queue.takeUpTo(queue, MAX_BATCH - 1), (rest) => commit([first, ...rest]))
        )
      )
    ).pipe(Effect.forever, Effect.forkScoped)

    /** Queues a finished call; it is committed with the next batch. */
    const submit = (call: FinishedCall) => Queue.offer(queue, call).pipe(Effect.asVoid)

    /** `submit` for callers outside Effect (the proxy's direct path): the queue is unbounded, so it never waits. */
    const offer = (call: FinishedCall) => void Queue.unsafeOffer(queue, call)

    return { submit, offer }
  }),
  dependencies: [Budgets.Default]
}) {}
