/**
 * For tests of writes whose input check resolves a host (the outbound guard, up to 3 s): a resolver whose
 * lookups of one host never answer, and the database sessions left idle inside a transaction meanwhile.
 */
import { expect } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import type { HostResolver } from "../../src/platform/OutboundGuard.js"
import { queryDatabase } from "./Database.js"
import { until } from "./Eventually.js"
import { loopbackOnlyResolver } from "./TestServer.js"

/** A resolver whose lookups of `host` never answer (`lookups`: when each started); others as loopbackOnlyResolver. */
export const slowResolver = (host: string) => {
  const lookups: Array<number> = []
  const resolver: HostResolver = {
    resolve: (name) => {
      if (name !== host) return loopbackOnlyResolver.resolve(name)
      lookups.push(Date.now())
      return new Promise(() => {})
    }
  }
  return { resolver, lookups }
}

/**
 * The last statements of the database's sessions idle inside a transaction that began by `at`: an audited
 * write's (its actor set, or a lookup after it) or anything else that waits.
 */
export const heldTransactions = (db: string, at: Date) =>
  Effect.map(
    queryDatabase<{ query: string }>(
      db,
      `select query from pg_stat_activity
        where datname = current_database() and state like 'idle in transaction%' and xact_start <= $1`,
      [at]
    ),
    (rows) => rows.map((row) => row.query)
  )

/**
 * Runs `writes` at once, each waiting on a lookup of `slow`'s host; once all of them wait, asserts that no
 * database session is idle in a transaction (none holds a pooled connection meanwhile). Answers the
 * writes' results once the lookups time out (a name that does not resolve at save time is accepted).
 */
export const writesWaitingOnDns = <A, E, R>(
  slow: ReturnType<typeof slowResolver>,
  db: string,
  writes: ReadonlyArray<Effect.Effect<A, E, R>>
) =>
  Effect.gen(function* () {
    const before = slow.lookups.length
    const waiting = yield* Effect.fork(Effect.all(writes, { concurrency: "unbounded" }))
    yield* until(
      Effect.sync(() => expect(slow.lookups.length - before).toBe(writes.length)),
      "30 seconds"
    )
    expect(yield* heldTransactions(db, new Date())).toEqual([])
    return yield* Fiber.join(waiting)
  })
