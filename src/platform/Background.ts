/**
 * Background loops that nothing but interruption can stop. In Effect,
 * `Effect.retry` retries typed failures only (a defect, e.g. a repository's
 * `dieOnErrors` turning a lost connection into one, ends the fiber),
 * `Effect.repeat` and `Effect.forever` end at the first failure, and a loop
 * that ends does so silently: flags stay stale, offsets stay uncommitted.
 * Every long-lived loop of the service runs through `keepRunning` or `every`.
 */
import { Cause, Duration, Effect, Exit, Schedule, Scheduler } from "effect"

/** How long a stopped loop waits before it runs again: 100 ms, doubling, at most 5 s. */
export const RESTART_BACKOFF: Schedule.Schedule<unknown> = Schedule.exponential(Duration.millis(100)).pipe(
  Schedule.union(Schedule.spaced(Duration.seconds(5)))
)

/**
 * Runs `loop` until the fiber is interrupted: whenever it fails, dies or
 * ends, that is logged as a warning naming the loop and it runs again after
 * `backoff` (a schedule that never ends). An interruption (shutdown) ends it
 * at once.
 */
export const keepRunning = <E, R>(
  name: string,
  loop: Effect.Effect<unknown, E, R>,
  backoff: Schedule.Schedule<unknown> = RESTART_BACKOFF
): Effect.Effect<never, never, R> =>
  Effect.gen(function* () {
    const wait = yield* Schedule.driver(backoff)
    while (true) {
      const exit = yield* Effect.exit(loop)
      if (Exit.isFailure(exit) && Cause.isInterruptedOnly(exit.cause)) return yield* Effect.interrupt
      yield* Effect.logWarning(
        `${name} stopped; running it again`,
        ...(Exit.isFailure(exit) ? [exit.cause] : ["it ended"])
      ).pipe(Effect.annotateLogs({ loop: name }))
      yield* Effect.ignore(wait.next(undefined))
    }
  })

/**
 * Runs `task` now and then `interval` after each run ends, until the fiber is
 * interrupted; a run that fails or dies is logged and the next one runs as
 * scheduled.
 */
export const every = <E, R>(
  name: string,
  interval: Duration.DurationInput,
  task: Effect.Effect<unknown, E, R>
): Effect.Effect<never, never, R> =>
  keepRunning(name, Effect.forever(Effect.zipRight(task, Effect.sleep(interval))), Schedule.spaced(interval))

/**
 * For long synchronous work cut in slices: resumes from a timer, so the event loop serves pending I/O
 * (other requests, Kafka heartbeats) first. A plain yieldNow resumes from a microtask (up to 2,048 in a
 * row), which lets other fibers run but no socket be read.
 */
export const giveBackThread = Effect.withScheduler(Effect.yieldNow(), Scheduler.timer(0))
