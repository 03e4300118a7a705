/**
 * The throttle's counters on their own, under the test clock: attempts are
 * counted before they are checked, and expired entries are swept on a timer,
 * so the maps hold no more than one window of traffic.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, TestClock } from "effect"
import { LoginThrottle, makeAttemptWindows } from "../../src/identity/LoginThrottle.js"
import { AppConfig } from "../../src/platform/Config.js"
import { configLayer } from "../support/TestPlatform.js"

describe("attempt windows", () => {
  it.effect("counts up to the limit, then answers the seconds until the oldest attempt leaves the window", () =>
    Effect.gen(function* () {
      const windows = makeAttemptWindows(3, 60_000)
      for (let i = 0; i < 3; i++) expect(yield* windows.take(["user:a", "address:x"])).toBe(0)
      yield* TestClock.adjust("20 seconds")
      expect(yield* windows.take(["user:a"])).toBe(40)
      // A refused attempt is not counted: another key of the same call keeps its room.
      expect(yield* windows.take(["user:b", "address:x"])).toBe(40)
      expect(yield* windows.take(["user:b"])).toBe(0)
      yield* TestClock.adjust("40 seconds")
      expect(yield* windows.take(["user:a"])).toBe(0)
    })
  )

  it.effect("giveBack returns a counted attempt; clear forgets a key", () =>
    Effect.gen(function* () {
      const windows = makeAttemptWindows(1, 60_000)
      expect(yield* windows.take(["user:a"])).toBe(0)
      yield* windows.giveBack(["user:a"])
      expect(yield* windows.take(["user:a"])).toBe(0)
      expect(yield* windows.take(["user:a"])).toBeGreaterThan(0)
      yield* windows.clear(["user:a"])
      expect(yield* windows.take(["user:a"])).toBe(0)
    })
  )

  it.scoped("the service sweeps expired entries on its own, without further requests", () =>
    Effect.gen(function* () {
      const throttle = yield* LoginThrottle
      for (let i = 0; i < 500; i++) {
        yield* throttle.logins.take([`user:${i}`, `address:10.0.${i % 256}.1`])
        yield* throttle.signups.take([`address:10.1.${i % 256}.1`])
      }
      expect(yield* throttle.logins.size).toBe(756)
      expect(yield* throttle.signups.size).toBe(256)
      // Past both windows (60 s and 120 s) and the next sweep.
      yield* TestClock.adjust("121 seconds")
      yield* TestClock.adjust("60 seconds")
      expect(yield* throttle.logins.size).toBe(0)
      expect(yield* throttle.signups.size).toBe(0)
    }).pipe(
      Effect.provide(
        LoginThrottle.Default.pipe(
          Layer.provide(AppConfig.Default),
          Layer.provide(configLayer({ LOGIN_FAILURE_WINDOW_SECONDS: "60", SIGNUP_WINDOW_SECONDS: "120" }))
        )
      )
    )
  )
})
