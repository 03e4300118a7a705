/** A wake-up signal: `wait` suspends until the next `fire` or the timeout, whichever is first. */
import { Deferred, Duration, Effect, Ref } from "effect"

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
