/**
 * Failed-login throttling per username and per client address: after
 * LOGIN_FAILURE_LIMIT failures within LOGIN_FAILURE_WINDOW_SECONDS, further
 * attempts answer 429 with Retry-After until the window has room again,
 * whether or not the user exists. Kept in process memory (each API process
 * counts on its own).
 */
import { Effect } from "effect"
import { AppConfig } from "../platform/Config.js"

export class LoginThrottle extends Effect.Service<LoginThrottle>()("identity/LoginThrottle", {
  effect: Effect.gen(function* () {
    const config = yield* AppConfig
    const windowMillis = config.loginFailureWindowSeconds * 1000
    const failures = new Map<string, Array<number>>()

    const recent = (key: string, now: number) => {
      const kept = (failures.get(key) ?? []).filter((at) => now - at < windowMillis)
      if (kept.length === 0) failures.delete(key)
      else failures.set(key, kept)
      return kept
    }

    /** Seconds to wait before another attempt for any of the keys, or 0 when allowed. */
    const retryAfter = (keys: ReadonlyArray<string>) =>
      Effect.sync(() => {
        const now = Date.now()
        let wait = 0
        for (const key of keys) {
          const times = recent(key, now)
          if (times.length >= config.loginFailureLimit) {
            wait = Math.max(
              wait,
              Math.ceil((times[times.length - config.loginFailureLimit]! + windowMillis - now) / 1000)
            )
          }
        }
        return wait
      })

    const recordFailure = (keys: ReadonlyArray<string>) =>
      Effect.sync(() => {
        const now = Date.now()
        for (const key of keys) failures.set(key, [...recent(key, now), now])
      })

    const clear = (keys: ReadonlyArray<string>) => Effect.sync(() => keys.forEach((key) => failures.delete(key)))

    return { retryAfter, recordFailure, clear }
  })
}) {}
