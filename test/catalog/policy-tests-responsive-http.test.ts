/**
 * `POST /v1/policies/test` runs the tests of every enabled policy over the
 * whole set: at the default limits (1,000 policies, 50 tests each) that is
 * 50,000 decisions over 1,000 policies, tens of seconds of work. It must not
 * hold the thread all that time: other requests (of any workspace) keep
 * being answered while it runs.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Fiber, Option } from "effect"
import { queryDatabase } from "../support/Database.js"
import { call, request } from "../support/Raw.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, TestDatabaseUrl, testServerWithDatabase } from "../support/TestServer.js"

const POLICIES = 1_000
const TESTS = 50

/** A policy document with TESTS tests, each an 840-character reply the policy permits. */
const document = {
  id: "p0",
  description: "many tests",
  family: "content",
  severity: "high",
  action: "deny",
  match: { type: "literal", value: "never-said-0", target: "content" },
  tests: Array.from({ length: TESTS }, (_, index) => ({
    name: `test ${index}`,
    event: { action: { operation: "reply", content: "You will get a full refund and some words ".repeat(20) } },
    expect: "permit"
  }))
}

layer(testServerWithDatabase("database"), SERVER_OPTIONS)("policy tests keep the service responsive", (it) => {
  it.effect(
    "while the tests of 1,000 policies run, other requests keep being answered",
    () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const url = yield* TestDatabaseUrl
        const owner = yield* tenant(base)
        const other = yield* tenant(base)
        // The workspace at its policy limit, each policy with the most tests a document may carry.
        yield* queryDatabase(
          url,
          `insert into policies (workspace_id, id, description, family, severity, action, enabled, source_yaml, document)
           select $1, 'p' || i, 'many tests', 'content', 'high', 'deny', true, 'stored by the test',
                  jsonb_set(jsonb_set($2::jsonb, '{id}', to_jsonb('p' || i)), '{match,value}', to_jsonb('never-said-' || i))
           from generate_series(0, $3::int - 1) as i`,
          [owner.workspaceId, JSON.stringify(document), POLICIES]
        )
        const run = yield* Effect.fork(
          request(`${base}/v1/policies/test`, {
            method: "POST",
            headers: { authorization: `Bearer ${owner.jwt}`, "content-type": "application/json" },
            body: "{}"
          })
        )
        // Requests of another workspace while the run is in flight: answered one after another while it runs (a
        // run holding the thread would answer the first only once it had ended). No time bound: the machine is shared.
        let answered = 0
        while (Option.isNone(yield* Fiber.poll(run))) {
          const answer = yield* call(base, "GET", "/v1/policies", { token: other.jwt })
          expect(answer.status).toBe(200)
          answered += 1
        }
        const report = yield* Fiber.join(run)
        expect(report.status).toBe(200)
        expect(report.body).toMatchObject({ passed: POLICIES * TESTS, failed: 0 })
        expect(answered).toBeGreaterThan(2)
      }),
    { timeout: 180_000 }
  )
})
