/**
 * The regex compile budget (docs/policies.md#compile-budget), over HTTP against the real service:
 * the regexes of one request's documents together may cost at most REQUEST_COMPILE_BUDGET units
 * (each distinct pattern PATTERN_BASE_COST plus its estimated expansion). Past it, validation, create
 * and a dry run's candidates answer 400 at `match` / `candidate_policies` and nothing is stored;
 * within it the same patterns are accepted. Before the budget, one document with hundreds of distinct
 * regexes held the main thread for tens of seconds while they compiled.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { stringify } from "yaml"
import { PATTERN_BASE_COST, REQUEST_COMPILE_BUDGET } from "../../src/catalog/CompileBudget.js"
import { createAgent, eventBody, reply, yamlBytes } from "../support/Events.js"
import { call, expectValidation } from "../support/Raw.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import { listPolicies } from "./catalog-helpers.js"

/** Ordinary patterns (expansion well under PATTERN_BASE_COST / 10), distinct by their prefix. */
const patternsFor = (count: number) => Array.from({ length: count }, (_, i) => `ord${i}-[0-9]{6}`)
/** More distinct ordinary patterns than the budget pays for; and a count it pays for. */
const OVER = Math.floor(REQUEST_COMPILE_BUDGET / PATTERN_BASE_COST) + 1
const WITHIN = Math.floor(REQUEST_COMPILE_BUDGET / (PATTERN_BASE_COST * 1.1)) - 1

/** A policy whose match is `any` over `patterns` (16 children per list, nested as needed). */
const documentWith = (id: string, patterns: ReadonlyArray<string>) => {
  const leaves = patterns.map((value) => ({ type: "regex", value, target: "content" }))
  const groups = []
  for (let i = 0; i < leaves.length; i += 16) groups.push({ any: leaves.slice(i, i + 16) })
  return stringify({
    id,
    description: "order codes",
    family: "content",
    severity: "high",
    action: "deny",
    match: groups.length === 1 ? groups[0] : { any: groups }
  })
}

layer(testServer("database"), SERVER_OPTIONS)("regex compile budget", (it) => {
  it.effect("a document past the budget is invalid at match, refused on create, and nothing is stored", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const over = documentWith("too-many-codes", patternsFor(OVER))
      const validation = yield* owner.api.policies.validatePolicy({ payload: yamlBytes(over) })
      expect(validation.valid).toBe(false)
      expect(validation.errors.map((error) => error.path)).toEqual(["match"])
      expect(validation.errors[0]!.message).toContain(`at most ${REQUEST_COMPILE_BUDGET}`)
      const created = yield* call(base, "POST", "/v1/policies", {
        token: owner.jwt,
        raw: over,
        contentType: "application/yaml"
      })
      expectValidation(created, "match")
      expect(yield* listPolicies(owner)).toEqual([])

      const within = documentWith("order-codes", patternsFor(WITHIN))
      expect((yield* owner.api.policies.validatePolicy({ payload: yamlBytes(within) })).valid).toBe(true)
      yield* owner.api.policies.createPolicy({ payload: yamlBytes(within) })
    })
  )

  it.effect("a dry run's candidates share one budget: together past it is 400 at candidate_policies", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      yield* createAgent(base, owner, "budget-bot")
      const patterns = patternsFor(OVER)
      const half = Math.ceil(patterns.length / 2)
      // Each document alone is within the budget; the two together are not.
      const candidates = [
        documentWith("codes-a", patterns.slice(0, half)),
        documentWith("codes-b", patterns.slice(half))
      ]
      const event = eventBody(owner, "budget-bot", reply("order ord1-123456"))
      const refused = yield* call(base, "POST", "/v1/events/evaluate", {
        token: owner.jwt,
        body: { ...event, candidate_policies: candidates }
      })
      expectValidation(refused, "candidate_policies")
      const alone = yield* owner.api.events.evaluateEvent({
        payload: { ...event, candidate_policies: [candidates[0]!] }
      })
      expect(alone.effect).toBe("deny")
    })
  )
})
