/**
 * The compile allowance (docs/policies.md#compile-budget, src/catalog/CompileAllowance.ts): one
 * request's regexes are bounded, and the compile time requests cause is a debt of their workspace
 * and of the process. Past it, requests that would compile answer 429 `compile_rate_limited` with
 * Retry-After, while decisions, dry runs without candidates and other workspaces (for the
 * workspace's debt) go on. Before, a member sending validations of distinct patterns at the
 * expansion bound back to back kept the API thread compiling, and every workspace's decisions waited.
 *
 * The allowances are set tiny here (1 ms of compiling per second: 30 ms of debt before requests
 * wait), so one request at the bound, which compiles for far longer on any machine, uses one up.
 */
import { describe, expect, it as plainIt, layer } from "@effect/vitest"
import { randomUUID } from "node:crypto"
import { Effect } from "effect"
import { stringify } from "yaml"
import { charge, debtAt, waitFor, type WorkMeter } from "../../src/platform/WorkMeters.js"
import { createAgent, eventBody, reply } from "../support/Events.js"
import { call, expectError } from "../support/Raw.js"
import { type Tenant, tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"

/** Three distinct patterns near the expansion bound (each `\p{L}{9}` expands to 9,000): within one request's budget. */
const heavyDocument = (id: string) =>
  stringify({
    id,
    description: "letters",
    family: "content",
    severity: "high",
    action: "deny",
    // A fresh suffix each time: a pattern's verdict is kept, and a kept verdict compiles nothing.
    match: {
      any: [1, 2, 3].map((i) => ({
        type: "regex",
        value: `\\p{L}{9}${randomUUID().slice(0, 8)}${i}`,
        target: "content"
      }))
    }
  })

const validate = (base: string, owner: Tenant) =>
  call(base, "POST", "/v1/policies/validate", {
    token: owner.jwt,
    raw: heavyDocument("letters"),
    contentType: "application/yaml"
  })

/** Two workspaces; the first has the agent its decisions name. */
const twoTenants = (base: string) =>
  Effect.gen(function* () {
    const a = yield* tenant(base)
    const b = yield* tenant(base)
    yield* createAgent(base, a, "compile-bot")
    return { a, b }
  })

const decide = (base: string, owner: Tenant) =>
  call(base, "POST", "/v1/events", { token: owner.jwt, body: eventBody(owner, "compile-bot", reply("hello")) })

layer(testServer("database", { COMPILE_MS_PER_SECOND_PER_WORKSPACE: "1" }), SERVER_OPTIONS)(
  "a workspace's compile allowance",
  (it) => {
    it.effect(
      "a workspace past its allowance gets 429 on what compiles; its decisions and other workspaces go on",
      () =>
        Effect.gen(function* () {
          const base = yield* baseUrl
          const { a, b } = yield* twoTenants(base)

          const first = yield* validate(base, a)
          expect(first.status, first.text).toBe(200)
          expect((first.body as { valid: boolean }).valid).toBe(true)

          const refused = expectError(yield* validate(base, a), 429, "compile_rate_limited")
          expect(refused.message).toContain("COMPILE_MS_PER_SECOND_PER_WORKSPACE")
          const again = yield* call(base, "POST", "/v1/policies", {
            token: a.jwt,
            raw: heavyDocument("letters"),
            contentType: "application/yaml"
          })
          expectError(again, 429, "compile_rate_limited")
          expect(Number(again.headers.get("retry-after"))).toBeGreaterThan(0)
          // Dry runs with candidates share the allowance; without candidates they compile nothing new.
          const event = eventBody(a, "compile-bot", reply("hello"))
          const dry = yield* call(base, "POST", "/v1/events/evaluate", {
            token: a.jwt,
            body: { ...event, candidate_policies: [heavyDocument("dry")] }
          })
          expectError(dry, 429, "compile_rate_limited")
          const plainDry = yield* call(base, "POST", "/v1/events/evaluate", { token: a.jwt, body: event })
          expect(plainDry.status, plainDry.text).toBe(200)
          const decided = yield* decide(base, a)
          expect(decided.status, decided.text).toBe(200)

          const other = yield* validate(base, b)
          expect(other.status, other.text).toBe(200)
        })
    )
  }
)

layer(testServer("database", { COMPILE_MS_PER_SECOND: "1" }), SERVER_OPTIONS)(
  "the process's compile allowance",
  (it) => {
    it.effect(
      "past the process's allowance the workspaces that compiled lately wait; one that did not compiles once",
      () =>
        Effect.gen(function* () {
          const base = yield* baseUrl
          const { a, b } = yield* twoTenants(base)
          expect((yield* validate(base, a)).status).toBe(200)

          // a ran the process's debt up: a waits, and its decisions go on.
          const refused = expectError(yield* validate(base, a), 429, "compile_rate_limited")
          expect(refused.message).toContain("COMPILE_MS_PER_SECOND)")
          const decided = yield* decide(base, a)
          expect(decided.status, decided.text).toBe(200)
          // b has compiled nothing lately: its request compiles, and then b waits too.
          expect((yield* validate(base, b)).status).toBe(200)
          expectError(yield* validate(base, b), 429, "compile_rate_limited")
        })
    )
  }
)

describe("compile meters", () => {
  plainIt("a debt is paid back at the rate, and requests wait only past the burst", () => {
    const meter: WorkMeter = { debt: 0, at: 0 }
    const rate = 100 // ms of compiling per second
    const burst = 3_000
    charge(meter, rate, burst, 0)
    expect(waitFor(meter, rate, burst, 0)).toBe(0) // exactly the burst: still admitted
    charge(meter, rate, 500, 0)
    expect(waitFor(meter, rate, burst, 0)).toBe(5)
    expect(waitFor(meter, rate, burst, 4_000)).toBe(1)
    expect(waitFor(meter, rate, burst, 5_000)).toBe(0)
    expect(debtAt(meter, rate, 1_000_000)).toBe(0)
  })
})
