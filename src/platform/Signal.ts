/** A wake-up signal: `wait` suspends until the next `fire` or the timeout, whichever is first. */
import { type Cause, Deferred, Duration, Effect, Ref, type Scope } from "effect"
import { BroadcastChannel } from "node:worker_threads"

export interface Signal {
  readonly fire: Effect.Effect<void>
  readonly wait: (timeout: Duration.DurationInput) => Effect.Effect<void>
  /**
   * Arms a wait now, to await later: a fire between arming and awaiting is not missed (check the work, then
   * await, without a gap in which a fire is lost).
   */
  readonly arm: Effect.Effect<(timeout: Duration.DurationInput) => Effect.Effect<void>>
}

export const makeSignal: Effect.Effect<Signal> = Effect.gen(function* () {
  const current = yield* Ref.make(yield* Deferred.make<void>())
  const fire = Effect.flatMap(Deferred.make<void>(), (next) =>
    Ref.getAndSet(current, next).pipe(
      Effect.flatMap((previous) => Deferred.succeed(previous, undefined)),
      Effect.asVoid
    )
  )
  const arm = Effect.map(
    Ref.get(current),
    (deferred) => (timeout: Duration.DurationInput) =>
      Effect.asVoid(Effect.timeoutOption(Deferred.await(deferred), timeout))
  )
  const wait = (timeout: Duration.DurationInput) => Effect.flatMap(arm, (armed) => armed(timeout))
  return { fire, wait, arm }
})

/**
 * A signal that also wakes the waiters of every other thread of this process
 * that made one with the same `name` (the all-in-one's API thread writes the
 * outbox, its stream-worker thread relays it).
 */
export const makeProcessSignal = (name: string): Effect.Effect<Signal, never, Scope.Scope> =>
  Effect.gen(function* () {
    const local = yield* makeSignal
    const channel = yield* Effect.acquireRelease(
      Effect.sync(() => new BroadcastChannel(name)),
      (channel) => Effect.sync(() => channel.close())
    )
    channel.unref()
    channel.onmessage = () => Effect.runFork(local.fire)
    return {
      fire: Effect.zipRight(
        local.fire,
        Effect.sync(() => channel.postMessage(0))
      ),
      wait: local.wait,
      arm: local.arm
    }
  })

/**
 * How long a job runner waits between looks at its queue when nothing wakes it. A job queued by this process
 * (any thread) wakes its runners at once; one queued by another process waits at most this long.
 */
export const IDLE_CLAIM_POLL = Duration.seconds(1)

/** The signal that a job of `queue` was queued in this process. */
export const jobsQueued = (queue: "redteam" | "impact") => makeProcessSignal(`guardrail-${queue}-jobs-queued`)

/** Runs `claim` now, then again whenever `queued` fires or IDLE_CLAIM_POLL passes, for as long as the scope lives. */
export const claimWhenQueued = <E, R>(
  queued: Signal,
  claim: Effect.Effect<void, E, R>,
  onFailure: (cause: Cause.Cause<E>) => Effect.Effect<void>
) =>
  Effect.gen(function* () {
    const armed = yield* queued.arm
    yield* Effect.catchAllCause(claim, onFailure)
    yield* armed(IDLE_CLAIM_POLL)
  }).pipe(Effect.forever, Effect.forkScoped)
