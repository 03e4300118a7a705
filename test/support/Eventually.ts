import { Duration, Effect, Schedule } from "effect"

/** Retries `check` until it succeeds or `timeout` passes, then fails with its last error. */
export const eventually = <A, E, R>(check: Effect.Effect<A, E, R>, timeout: Duration.DurationInput = "30 seconds") =>
  check.pipe(Effect.retry(Schedule.spaced("50 millis").pipe(Schedule.upTo(timeout))))
