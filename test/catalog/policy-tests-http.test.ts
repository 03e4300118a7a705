/**
 * Policy `tests` over HTTP against the real service and PostgreSQL: run at
 * validate, create and PUT (a failing test is a validation error at
 * `tests.N.expect` giving the actual effect), and `POST /v1/policies/test`
 * over the workspace's current policy set.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { expectFailure, expectInvalid } from "../support/Api.js"
import { policyDocument, yamlBytes } from "../support/Events.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import { policyPath } from "./catalog-helpers.js"

/** `policyDocument` with a `tests` list (JSON is YAML). */
const withTests = (yaml: string, tests: ReadonlyArray<unknown>) => `${yaml}tests: ${JSON.stringify(tests)}\n`

const denies = (content: string) => ({
  name: `denies ${content}`,
  event: { action: { operation: "reply", content } },
  expect: "deny"
})
const permits = (content: string) => ({
  name: `permits ${content}`,
  event: { action: { operation: "reply", content } },
  expect: "permit"
})

layer(testServer("database"), SERVER_OPTIONS)("policy tests over HTTP", (it) => {
  describe("at validate, create and PUT", () => {
    it.effect("passing tests validate; a failing one names tests.N.expect and the actual effect", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const base_doc = policyDocument("no-voucher", { value: "gift voucher" })
        const good = withTests(base_doc, [denies("a gift voucher"), permits("a coupon")])
        const valid = yield* owner.api.policies.validatePolicy({ payload: yamlBytes(good) })
        expect(valid).toEqual({ valid: true, policy_id: "no-voucher", errors: [] })

        const bad = withTests(base_doc, [denies("a gift voucher"), permits("a coupon"), denies("a coupon")])
        const invalid = yield* owner.api.policies.validatePolicy({ payload: yamlBytes(bad) })
        expect(invalid.valid).toBe(false)
        expect(invalid.errors).toEqual([
          { path: "tests.2.expect", message: 'test "denies a coupon" expected deny, got permit' }
        ])
        yield* expectInvalid(owner.api.policies.createPolicy({ payload: yamlBytes(bad) }), "tests.2.expect")

        const created = yield* owner.api.policies.createPolicy({ payload: yamlBytes(good) })
        expect(created.version).toBe(1)
        yield* expectInvalid(
          owner.api.policies.replacePolicy({ path: policyPath("no-voucher"), payload: yamlBytes(bad) }),
          "tests.2.expect"
        )
        expect((yield* owner.api.policies.getPolicy({ path: policyPath("no-voucher") })).version).toBe(1)
      })
    )

    it.effect("rewrite tests check transformed_value; malformed tests are schema errors; at most 50", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const rewrite = policyDocument("mask", { value: "secret", action: "rewrite", rewrite: "***" })
        const test = (transformed: string) => ({
          name: "masks",
          event: { action: { operation: "reply", content: "a secret here" } },
          expect: "rewrite",
          transformed_value: transformed
        })
        expect(
          (yield* owner.api.policies.validatePolicy({ payload: yamlBytes(withTests(rewrite, [test("a *** here")])) }))
            .valid
        ).toBe(true)
        const wrong = yield* owner.api.policies.validatePolicy({
          payload: yamlBytes(withTests(rewrite, [test("a here")]))
        })
        expect(wrong.errors.map((error) => error.path)).toEqual(["tests.0.transformed_value"])

        const malformed = yield* owner.api.policies.validatePolicy({
          payload: yamlBytes(
            withTests(rewrite, [{ name: "x", event: { action: { operation: "reply" } }, expect: "maybe" }])
          )
        })
        expect(malformed.errors.map((error) => error.path)).toContain("tests.0.expect")
        const many = yield* owner.api.policies.validatePolicy({
          payload: yamlBytes(
            withTests(
              rewrite,
              Array.from({ length: 51 }, () => test("a *** here"))
            )
          )
        })
        expect(many.valid).toBe(false)
        expect(many.errors.map((error) => error.path)).toContain("tests")
      })
    )
  })

  describe("POST /v1/policies/test", () => {
    it.effect("runs the enabled policies' tests over the current set, or the given ids'", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        yield* owner.api.policies.createPolicy({
          payload: yamlBytes(
            withTests(policyDocument("no-voucher", { value: "gift voucher" }), [
              denies("a gift voucher"),
              permits("a coupon")
            ])
          )
        })
        // Alone its test passes; with no-voucher in the set, "a gift voucher coupon" is denied by that one too.
        yield* owner.api.policies.createPolicy({
          payload: yamlBytes(
            withTests(policyDocument("no-coupon", { value: "coupon", enabled: false }), [
              denies("a coupon"),
              permits("a gift voucher")
            ])
          )
        })
        const enabledOnly = yield* owner.api.policies.testPolicies({ payload: {} })
        expect(enabledOnly).toEqual({
          results: [
            { policy_id: "no-voucher", name: "denies a gift voucher", passed: true, expected: "deny", actual: "deny" },
            { policy_id: "no-voucher", name: "permits a coupon", passed: true, expected: "permit", actual: "permit" }
          ],
          passed: 2,
          failed: 0
        })
        // Named, the disabled policy is tested as enabled, alongside the live no-voucher.
        const named = yield* owner.api.policies.testPolicies({ payload: { ids: ["no-coupon", "no-voucher"] } })
        expect(named.passed).toBe(3)
        expect(named.failed).toBe(1)
        expect(named.results.filter((result) => !result.passed)).toEqual([
          { policy_id: "no-coupon", name: "permits a gift voucher", passed: false, expected: "permit", actual: "deny" }
        ])
        yield* expectFailure(owner.api.policies.testPolicies({ payload: { ids: ["nobody"] } }), 404, "policy_not_found")
      })
    )

    it.effect("the JSON Schema describes tests", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const schema = JSON.stringify(yield* owner.api.policies.getPolicySchema())
        expect(schema).toContain('"tests"')
        expect(schema).toContain("PolicyTestCase")
      })
    )
  })
})
