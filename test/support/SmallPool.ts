/**
 * A service with a small database pool, for suites showing that reads waiting on the database never take
 * the connections decisions need: the server, and a tenant with an agent whose decisions are known to answer.
 */
import { expect } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { lockedTable, serviceWaitsOnLocks } from "./Database.js"
import { createAgent, eventBody, reply } from "./Events.js"
import { until } from "./Eventually.js"
import { call, type JsonResponse } from "./Raw.js"
import { tenant } from "./Tenants.js"
import { baseUrl, TestDatabaseUrl, testServerWithDatabase } from "./TestServer.js"

export const POOL_SIZE = 4

/** Statements may wait a minute: the waiting reads must not time out before the lock they wait on goes. */
export const smallPoolServer = testServerWithDatabase("database", {
  DATABASE_POOL_SIZE: String(POOL_SIZE),
  DATABASE_STATEMENT_TIMEOUT_MS: "60000"
})

/** A tenant, its agent "steady", and `decide`: one decision of it (answered 200 once here already). */
export const steadyTenant = Effect.gen(function* () {
  const base = yield* baseUrl
  const url = yield* TestDatabaseUrl
  const owner = yield* tenant(base)
  yield* createAgent(base, owner, "steady")
  const decide = call(base, "POST", "/v1/events", {
    token: owner.jwt,
    body: eventBody(owner, "steady", reply("hello"))
  })
  expect((yield* decide).status).toBe(200)
  return { base, url, owner, decide }
})

/**
 * With `table` locked by another session: forks `reads` (more than the pool has connections), waits until one
 * of them waits on the lock, and expects `decide` to answer 200 meanwhile; answers the reads' answers once the
 * lock is gone.
 */
export const decisionWhileReadsWait = <E, R>(
  url: string,
  table: string,
  reads: Effect.Effect<Fiber.Fiber<ReadonlyArray<JsonResponse>, E>, never, R>,
  decide: Effect.Effect<JsonResponse>
) =>
  Effect.scoped(
    Effect.gen(function* () {
      yield* lockedTable(url, table)
      const waiting = yield* reads
      yield* until(
        Effect.filterOrFail(serviceWaitsOnLocks(url), (n) => n >= 1),
        "10 seconds"
      )
      const decision = yield* decide
      expect(decision.status, JSON.stringify(decision.body)).toBe(200)
      return waiting
    })
  ).pipe(Effect.flatMap(Fiber.join))
