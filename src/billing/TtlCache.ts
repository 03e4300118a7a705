/**
 * A small per-process cache whose entries live `ttl`: how the gateway's hot
 * path avoids a database round trip per request for values that change
 * rarely (routes, prices, budget settings). A change made in this process
 * drops the entry at once (`invalidate`); other processes see it within the
 * TTL, as with the authorization pipeline's settings cache.
 */
import { Duration, Effect } from "effect"

export const makeTtlCache = <A>(ttl: Duration.DurationInput, maxEntries = 10_000) => {
  const millis = Duration.toMillis(ttl)
  const entries = new Map<string, { readonly value: A; readonly until: number }>()

  const get = <E, R>(key: string, load: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.suspend(() => {
      const cached = entries.get(key)
      if (cached !== undefined && cached.until > Date.now()) return Effect.succeed(cached.value)
      return Effect.tap(load, (value) =>
        Effect.sync(() => {
          if (entries.size >= maxEntries) entries.clear()
          entries.set(key, { value, until: Date.now() + millis })
        })
      )
    })

  /** Drops every entry whose key starts with `prefix` (e.g. a workspace id). */
  const invalidate = (prefix: string) =>
    Effect.sync(() => {
      for (const key of entries.keys()) if (key.startsWith(prefix)) entries.delete(key)
    })

  return { get, invalidate }
}
