/**
 * What warm steps' loads take is given back when the run is interrupted
 * (src/platform/Warm.ts `settle`): a gateway call's budget reservation is
 * written by a load, and a client gone while it was being written left it
 * reserved until swept (about 21 minutes). The load now completes, and what
 * it took is abandoned; once `act` has it, nothing is abandoned.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import { needs, ready, settle, type WarmSteps } from "../../src/platform/Warm.js"

interface Loaded {
  readonly reservation?: string
}

/** Steps that need one reservation, written by a load that waits for `written`; `abandoned` records give-backs. */
const reservingSteps = (written: Deferred.Deferred<void>, loading: Deferred.Deferred<void>) => {
  const abandoned: Array<Loaded> = []
  const steps: WarmSteps<Loaded, string, never, "reserve", never, never> = {
    step: (loaded) => (loaded.reservation === undefined ? needs("reserve") : ready(loaded.reservation)),
    load: () =>
      Deferred.succeed(loading, undefined).pipe(
        Effect.zipRight(Deferred.await(written)),
        Effect.as({ reservation: "rsv_1" })
      ),
    abandon: (loaded) => Effect.sync(() => void abandoned.push(loaded))
  }
  return { steps, abandoned }
}

describe("warm steps interrupted", () => {
  it.effect("interrupted while a load writes, the load completes and what it took is given back", () =>
    Effect.gen(function* () {
      const written = yield* Deferred.make<void>()
      const loading = yield* Deferred.make<void>()
      const { abandoned, steps } = reservingSteps(written, loading)
      const acted: Array<string> = []
      const run = yield* Effect.fork(settle(steps, {}, (value) => acted.push(value)))
      yield* Deferred.await(loading)
      // The client goes while the reservation is being written; the write then commits.
      const interrupted = yield* Effect.fork(Fiber.interrupt(run))
      yield* Deferred.succeed(written, undefined)
      yield* Fiber.join(interrupted)
      expect(abandoned).toEqual([{ reservation: "rsv_1" }])
      expect(acted).toEqual([])
    })
  )

  it.effect("once act has what the loads took, an interruption gives nothing back", () =>
    Effect.gen(function* () {
      const written = yield* Deferred.make<void>()
      const loading = yield* Deferred.make<void>()
      yield* Deferred.succeed(written, undefined)
      const { abandoned, steps } = reservingSteps(written, loading)
      const acted: Array<string> = []
      expect(yield* settle(steps, {}, (value) => acted.push(value))).toBe(1)
      expect(acted).toEqual(["rsv_1"])
      expect(abandoned).toEqual([])
    })
  )
})
