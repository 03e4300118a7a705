/**
 * Attempt throttling in process memory (each API process counts on its own):
 * sign-in attempts per username and per client address, signups per client
 * address. A sign-in attempt is counted before its password is checked, so
 * concurrent guesses cannot all slip under the limit; a success takes its
 * attempt back and clears the username's count. Expired entries are swept
 * on a timer, so the maps stay bounded by the traffic of one window.
 */
import { Clock, Effect } from "effect"
import { every } from "../platform/Background.js"
import { AppConfig } from "../platform/Config.js"

/** Sliding-window counters: at most `limit` attempts per key within `windowMillis`. */
export const makeAttemptWindows = (limit: number, windowMillis: number) => {
  const attempts = new Map<string, Array<number>>()

  const recent = (key: string, now: number) => {
    const kept = (attempts.get(key) ?? []).filter((at) => now - at < windowMillis)
    if (kept.length === 0) attempts.delete(key)
    else attempts.set(key, kept)
    return kept
  }

  /**
   * Counts an attempt against every key and answers 0, or, when any key is at
   * its limit, counts nothing and answers the seconds until it has room.
   * Synchronous, so check and count cannot interleave with other requests.
   */
  const take = (keys: ReadonlyArray<string>) =>
    Effect.map(Clock.currentTimeMillis, (now) => {
      let wait = 0
      for (const key of keys) {
        const times = recent(key, now)
        if (times.length >= limit) {
          wait = Math.max(wait, Math.ceil((times[times.length - limit]! + windowMillis - now) / 1000))
        }
      }
      if (wait === 0) for (const key of keys) attempts.set(key, [...recent(key, now), now])
      return Math.max(wait, 0)
    })

  /** Takes back one attempt counted by `take` (the latest) for each key. */
  const giveBack = (keys: ReadonlyArray<string>) =>
    Effect.sync(() => {
      for (const key of keys) {
        const times = attempts.get(key)
        times?.pop()
        if (times?.length === 0) attempts.delete(key)
      }
    })

  const clear = (keys: ReadonlyArray<string>) => Effect.sync(() => keys.forEach((key) => attempts.delete(key)))

  /** Drops every entry whose attempts have all left the window. */
  const sweep = Effect.map(Clock.currentTimeMillis, (now) => {
    for (const key of [...attempts.keys()]) recent(key, now)
  })

  return { take, giveBack, clear, sweep, size: Effect.sync(() => attempts.size) }
}

export type AttemptWindows = ReturnType<typeof makeAttemptWindows>

export class LoginThrottle extends Effect.Service<LoginThrottle>()("identity/LoginThrottle", {
  scoped: Effect.gen(function* () {
    const config = yield* AppConfig
    const logins = makeAttemptWindows(config.loginFailureLimit, config.loginFailureWindowSeconds * 1000)
    const signups = makeAttemptWindows(config.signupLimit, config.signupWindowSeconds * 1000)
    const sweepEvery = Math.min(config.loginFailureWindowSeconds, config.signupWindowSeconds)
    yield* Effect.forkScoped(
      every("login-throttle sweep", `${sweepEvery} seconds`, Effect.all([logins.sweep, signups.sweep]))
    )
    return { logins, signups }
  })
}) {}
