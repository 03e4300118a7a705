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

/** Lets other fibers run (the test clock does not move) until `ref` reaches `count`, then expects it there. */
const reached = (ref: Ref.Ref<number>, count: number) =>
  Effect.gen(function* () {
    for (let turn = 0; turn < 100 && (yield* Ref.get(ref)) < count; turn++) yield* Effect.yieldNow()
    expect(yield* Ref.get(ref)).toBe(count)
  })

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
      // The backoff: 100 ms, then doubling (at most 5 s); each run waits its whole turn.
      for (const [next, millis] of [
        [2, 100],
        [3, 200],
        [4, 400]
      ] as const) {
        yield* TestClock.adjust(Duration.millis(millis - 1))
        yield* reached(runs, next - 1)
        yield* TestClock.adjust(Duration.millis(1))
        yield* reached(runs, next)
      }

      const exit = yield* Fiber.interrupt(fiber)
      expect(Exit.isInterrupted(exit)).toBe(true)
      yield* TestClock.adjust(Duration.minutes(1))
      yield* reached(runs, 4)
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
      yield* reached(runs, 3)
      yield* Fiber.interrupt(fiber)
    })
  )
})
