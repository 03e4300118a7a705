/**
 * Background loops (src/platform/Background.ts) stop only when interrupted:
 * a loop that dies (a repository's `dieOnErrors`), fails or ends is logged
 * and run again after its backoff, and a periodic task that dies runs again
 * at its next interval. `Effect.retry` and `Effect.repeat`, which the loops
 * used before, leave the first two for good.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Exit, Fiber, Ref, TestClock } from "effect"
import { every, keepRunning } from "../../src/platform/Background.js"

/** Yields until `ref` reaches `count` (other fibers run meanwhile; the test clock does not move). */
const reached = (ref: Ref.Ref<number>, count: number) =>
  Ref.get(ref).pipe(Effect.repeat({ until: (value) => value >= count }), Effect.zipLeft(Effect.yieldNow()))

/** Moves the test clock past the longest restart backoff (5 s) and lets the woken fibers run. */
const pastBackoff = Effect.zipRight(TestClock.adjust(Duration.seconds(5)), Effect.yieldNow())

describe("background loops", () => {
  it.effect("a loop that dies, fails or ends runs again after a backoff; only interruption stops it", () =>
    Effect.gen(function* () {
      const runs = yield* Ref.make(0)
      const loop = Effect.flatMap(
        Ref.updateAndGet(runs, (n) => n + 1),
        (run) => {
          if (run === 1) return Effect.die(new Error("a defect, as dieOnErrors makes of a lost connection"))
          if (run === 2) return Effect.fail("a typed failure")
          if (run === 3) return Effect.void
          return Effect.never
        }
      )
      const fiber = yield* Effect.fork(keepRunning("test loop", loop))
      yield* reached(runs, 1)
      for (const next of [2, 3, 4]) {
        yield* pastBackoff
        yield* reached(runs, next)
      }

      const exit = yield* Fiber.interrupt(fiber)
      expect(Exit.isInterrupted(exit)).toBe(true)
      yield* pastBackoff
      expect(yield* Ref.get(runs)).toBe(4)
    })
  )

  it.effect("a periodic task that dies every time still runs at each interval", () =>
    Effect.gen(function* () {
      const runs = yield* Ref.make(0)
      const task = Effect.zipRight(
        Ref.update(runs, (n) => n + 1),
        Effect.die(new Error("the database is gone"))
      )
      const fiber = yield* Effect.fork(every("test task", Duration.minutes(1), task))
      yield* reached(runs, 1)
      for (const next of [2, 3]) {
        yield* TestClock.adjust(Duration.minutes(1))
        yield* reached(runs, next)
      }
      // Not before its interval.
      yield* TestClock.adjust(Duration.seconds(59))
      yield* Effect.yieldNow()
      expect(yield* Ref.get(runs)).toBe(3)
      yield* Fiber.interrupt(fiber)
    })
  )
})
