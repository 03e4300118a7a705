/**
 * Group commit: work that must be durable before its request is answered
 * (decisions, run-event appends) or soon after (gateway usage), where one
 * transaction per request would cap throughput at the database's commit
 * rate. Items queue up for one writer fiber, which commits whatever has
 * queued (up to `maxBatch`) together and then tells each item's waiter its
 * outcome. One writer: several concurrent committers were tried on
 * 2026-11-24 and throughput fell (docs/architecture.md).
 *
 * - `submit` (Effect) and `enqueue` (a callback, for the fast lane's direct
 *   path) queue the same way and get the same outcomes.
 * - A batch whose commit fails as a whole is retried item by item when
 *   `retryAlone` is set, so one bad item fails only its own request.
 * - A batch once taken is always committed (the writer is not interrupted
 *   mid-batch), and at shutdown whatever is still queued is committed
 *   before the scope ends; an item queued after that is refused.
 */
import { Cause, Deferred, type Duration, Effect, Exit, Queue, type Scope } from "effect"

export interface GroupCommit<I, A, E> {
  /** Queues `item`; answers its outcome once its batch is committed (or refused). */
  readonly submit: (item: I) => Effect.Effect<A, E>
  /** `submit` for callers outside Effect: `done` is called once, with the outcome. */
  readonly enqueue: (item: I, done?: (outcome: Exit.Exit<A, E>) => void) => void
}

export interface GroupCommitOptions<I, A, E> {
  /** What the batches are, for the log (e.g. "decision"). */
  readonly name: string
  readonly maxBatch: number
  /** How long a batch stays open after its first item, gathering more (default: not at all). */
  readonly linger?: Duration.DurationInput | undefined
  /** On a failed batch, commit each of its items alone (else each gets the batch's failure). */
  readonly retryAlone: boolean
  /** Commits a batch: one outcome per item, in order. A failure of the whole batch fails every item. */
  readonly commit: (batch: ReadonlyArray<I>) => Effect.Effect<ReadonlyArray<Exit.Exit<A, E>>, unknown>
}

type Pending<I, A, E> = readonly [I, (outcome: Exit.Exit<A, E>) => void]

const ignore = () => {}

export const makeGroupCommit = <I, A, E>(
  options: GroupCommitOptions<I, A, E>
): Effect.Effect<GroupCommit<I, A, E>, never, Scope.Scope> =>
  Effect.gen(function* () {
    const queue = yield* Effect.acquireRelease(Queue.unbounded<Pending<I, A, E>>(), Queue.shutdown)

    /** Tells a waiter its outcome; a callback that throws must not stop the writer. */
    const tell = (done: Pending<I, A, E>[1], outcome: Exit.Exit<A, E>) =>
      Effect.try(() => done(outcome)).pipe(
        Effect.catchAll((error) => Effect.logError(`a ${options.name}'s answer could not be sent`, error))
      )

    // Suspended: a `commit` that throws while building its effect fails this batch, not the writer fiber.
    const writeBatch = (batch: ReadonlyArray<Pending<I, A, E>>): Effect.Effect<void> =>
      Effect.suspend(() => options.commit(batch.map(([item]) => item))).pipe(
        Effect.flatMap((outcomes) =>
          Effect.forEach(batch, ([, done], index) => tell(done, outcomes[index] ?? missingOutcome()), { discard: true })
        ),
        Effect.catchAllCause((cause) =>
          options.retryAlone && batch.length > 1
            ? Effect.forEach(batch, (pending) => writeBatch([pending]), { discard: true })
            : Effect.logError(`${batch.length} ${options.name}(s) could not be committed`, cause).pipe(
                Effect.zipRight(
                  Effect.forEach(batch, ([, done]) => tell(done, Exit.die(Cause.squash(cause))), { discard: true })
                )
              )
        )
      )

    // Registered before the writer fiber, so it runs after that fiber has stopped: nothing queued is lost.
    yield* Effect.addFinalizer(() =>
      Effect.flatMap(Queue.takeAll(queue), (rest) => {
        const items = [...rest]
        const batches: Array<ReadonlyArray<Pending<I, A, E>>> = []
        for (let start = 0; start < items.length; start += options.maxBatch) {
          batches.push(items.slice(start, start + options.maxBatch))
        }
        return Effect.forEach(batches, writeBatch, { discard: true })
      })
    )
    const linger = options.linger === undefined ? Effect.void : Effect.sleep(options.linger)
    // Only the wait for a first item is interruptible: a batch once taken is always committed.
    yield* Effect.uninterruptibleMask((restore) =>
      restore(Queue.take(queue)).pipe(
        Effect.zipLeft(linger),
        Effect.flatMap((first) =>
          Effect.flatMap(Queue.takeUpTo(queue, options.maxBatch - 1), (rest) => writeBatch([first, ...rest]))
        )
      )
    ).pipe(Effect.forever, Effect.forkScoped)

    const enqueue = (item: I, done: (outcome: Exit.Exit<A, E>) => void = ignore) => {
      if (!Queue.unsafeOffer(queue, [item, done])) done(Exit.die(new Error(`the ${options.name} writer has stopped`)))
    }

    const submit = (item: I) =>
      Effect.flatMap(Deferred.make<A, E>(), (outcome) =>
        Effect.zipRight(
          Effect.sync(() => enqueue(item, (exit) => Deferred.unsafeDone(outcome, exit))),
          Deferred.await(outcome)
        )
      )

    return { submit, enqueue }
  })

const missingOutcome = () => Exit.die(new Error("a batch commit answered fewer outcomes than items"))

/** Every item of a batch committed: the outcomes of a commit that answers nothing per item. */
export const allCommitted = <I>(batch: ReadonlyArray<I>): ReadonlyArray<Exit.Exit<void>> => batch.map(() => Exit.void)
