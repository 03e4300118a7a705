/** A wake-up signal: `wait` suspends until the next `fire` or the timeout, whichever is first. */
import { Deferred, Duration, Effect, Ref, type Scope } from "effect"
import { BroadcastChannel } from "node:worker_threads"

export interface Signal {
  readonly fire: Effect.Effect<void>
  readonly wait: (timeout: Duration.DurationInput) => Effect.Effect<void>
}

export const makeSignal: Effect.Effect<Signal> = Effect.gen(function* () {
  const current = yield* Ref.make(yield* Deferred.make<void>())
  const fire = Effect.flatMap(Deferred.make<void>(), (next) =>
    Ref.getAndSet(current, next).pipe(
      Effect.flatMap((previous) => Deferred.succeed(previous, undefined)),
      Effect.asVoid
    )
  )
  const wait = (timeout: Duration.DurationInput) =>
    Ref.get(current).pipe(
      Effect.flatMap((deferred) => Effect.timeoutOption(Deferred.await(deferred), timeout)),
      Effect.asVoid
    )
  return { fire, wait }
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
      wait: local.wait
    }
  })
