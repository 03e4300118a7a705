/**
 * The wake-up signal the job runners wait on (src/platform/Signal.ts): a
 * fire between arming and awaiting is not lost, a runner claims again as
 * soon as a job is queued (not at its next idle look), and a process
 * signal wakes the other instances of its name.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Ref, TestClock } from "effect"
import { claimWhenQueued, IDLE_CLAIM_POLL, makeProcessSignal, makeSignal } from "../../src/platform/Signal.js"

/** Yields until `ref` reaches `count` (other fibers run meanwhile; the test clock does not move). */
const reached = (ref: Ref.Ref<number>, count: number) =>
  Ref.get(ref).pipe(Effect.repeat({ until: (value) => value >= count }), Effect.zipLeft(Effect.yieldNow()))

describe("Signal", () => {
  it.effect("a fire between arming and awaiting wakes the wait at once", () =>
    Effect.gen(function* () {
      const signal = yield* makeSignal
      const armed = yield* signal.arm
      yield* signal.fire
      // The test clock never moves: only the fire can end this wait (without it, the test would time out).
      yield* armed(Duration.hours(1))
    })
  )

  it.scoped("a runner claims at once when a job is queued, else once per idle poll", () =>
    Effect.gen(function* () {
      const signal = yield* makeSignal
      const claims = yield* Ref.make(0)
      yield* claimWhenQueued(
        signal,
        Ref.update(claims, (count) => count + 1),
        () => Effect.void
      )
      yield* reached(claims, 1)
      yield* Effect.yieldNow()
      expect(yield* Ref.get(claims)).toBe(1)
      yield* signal.fire
      yield* reached(claims, 2)
      yield* TestClock.adjust(IDLE_CLAIM_POLL)
      yield* reached(claims, 3)
      expect(yield* Ref.get(claims)).toBe(3)
    })
  )

  it.live("a process signal wakes the other instances of its name", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const name = `signal-test-${process.pid}-${Date.now()}`
        const sender = yield* makeProcessSignal(name)
        const receiver = yield* makeProcessSignal(name)
        const armed = yield* receiver.arm
        yield* sender.fire
        // Only the message can end this wait within the test's time.
        yield* armed(Duration.hours(1))
      })
    )
  )
})
