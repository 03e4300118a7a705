/**
 * A service with a small database pool, for suites showing that reads waiting on the database never take
 * the connections decisions need: the server, and a tenant with an agent whose decisions are known to answer.
 */
import { expect } from "@effect/vitest"
import { Effect } from "effect"
import { createAgent, eventBody, reply } from "./Events.js"
import { call } from "./Raw.js"
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
