import { Duration, Effect, Schedule } from "effect"

/** Retries `check` until it succeeds or `timeout` passes, then fails with its last error. */
export const eventually = <A, E, R>(check: Effect.Effect<A, E, R>, timeout: Duration.DurationInput = "30 seconds") =>
  check.pipe(Effect.retry(Schedule.spaced("50 millis").pipe(Schedule.upTo(timeout))))

/**
 * Retries `check` (an Effect that throws through `expect`, i.e. dies) every 100 ms until it passes or `timeout`
 * passes; then answers its last outcome. Unlike `eventually`, it retries defects too.
 */
export const until = <A, E, R>(check: Effect.Effect<A, E, R>, timeout: Duration.DurationInput = "10 seconds") =>
  Effect.gen(function* () {
    const deadline = Date.now() + Duration.toMillis(Duration.decode(timeout))
    for (;;) {
      const exit = yield* Effect.exit(check)
      if (exit._tag === "Success" || Date.now() > deadline) return yield* exit
      yield* Effect.sleep("100 millis")
    }
  })
