/**
 * Per-workspace policy limits (docs/policies.md#workspace-limits), over HTTP against the real
 * service, with small limits: MAX_REGEX_PATTERNS_PER_WORKSPACE distinct RE2 patterns (regexes and
 * any_of lists) and MAX_POLICIES_PER_WORKSPACE policies. A write past either answers 409 with the
 * conventions' error body and changes nothing; edits, reuse of a pattern, enabling and deleting
 * still work at the limit; another workspace keeps its own count; the red team's static policies
 * are created all together or not at all.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { expectFailure } from "../support/Api.js"
import { policyDocument, type PolicyOptions, yamlBytes } from "../support/Events.js"
import { expectError } from "../support/Raw.js"
import { type Tenant, tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import { agentPath, ids, listPolicies, policyPath, sendText, setEnabled } from "./catalog-helpers.js"
import { agentYaml, createAgent, DEMO } from "../redteam/redteam-helpers.js"

const MAX_PATTERNS = 3
const MAX_POLICIES = 5
const SETTINGS = {
  MAX_REGEX_PATTERNS_PER_WORKSPACE: String(MAX_PATTERNS),
  MAX_POLICIES_PER_WORKSPACE: String(MAX_POLICIES)
}

const regex = (value: string): PolicyOptions => ({ type: "regex", value })
const literal = (value: string): PolicyOptions => ({ type: "literal", value })

const create = (owner: Tenant, id: string, options: PolicyOptions) =>
  owner.api.policies.createPolicy({ payload: yamlBytes(policyDocument(id, options)) })

const replace = (owner: Tenant, id: string, options: PolicyOptions) =>
  owner.api.policies.replacePolicy({ path: policyPath(id), payload: yamlBytes(policyDocument(id, options)) })

const setUp = Effect.gen(function* () {
  const base = yield* baseUrl
  return { base, owner: yield* tenant(base) }
})

/** Fills the workspace's regex allowance with ORD-, INV- and REF- codes. */
const fillPatterns = (owner: Tenant) =>
  Effect.forEach(["ord", "inv", "ref"], (prefix) => create(owner, `${prefix}-codes`, regex(`${prefix}-[0-9]{6}`)))

layer(testServer("database", SETTINGS), SERVER_OPTIONS)("workspace policy limits", (it) => {
  it.effect("a policy with one distinct regex past the limit is refused with the error body, naming the setting", () =>
    Effect.gen(function* () {
      const { base, owner } = yield* setUp
      yield* fillPatterns(owner)
      const response = yield* sendText(
        base,
        owner.jwt,
        "POST",
        "/v1/policies",
        policyDocument("sku-codes", regex("sku-[0-9]{6}"))
      )
      const error = expectError(response, 409, "regex_limit_reached")
      expect(error.message).toContain("MAX_REGEX_PATTERNS_PER_WORKSPACE")
      expect(error.message).toContain(String(MAX_PATTERNS))
      // An any_of list of two runs as a pattern too; the same text case-sensitive is another pattern.
      const anyOf = policyDocument("sku-words", literal("sku")).replace("type: literal", "type: any_of")
      yield* expectFailure(
        owner.api.policies.createPolicy({ payload: yamlBytes(anyOf.replace('"sku"', '["sku", "stock unit"]')) }),
        409,
        "regex_limit_reached"
      )
      yield* expectFailure(
        owner.api.policies.createPolicy({
          payload: yamlBytes(policyDocument("ord-exact", regex("ord-[0-9]{6}")) + "  case_sensitive: true\n")
        }),
        409,
        "regex_limit_reached"
      )
      expect(ids(yield* listPolicies(owner))).toEqual(["inv-codes", "ord-codes", "ref-codes"])
    })
  )

  it.effect("at the regex limit, reusing a pattern, adding literals, editing and rolling back still work", () =>
    Effect.gen(function* () {
      const { owner } = yield* setUp
      yield* fillPatterns(owner)
      // Another policy over the same pattern compiles nothing new; a literal runs without RE2.
      yield* create(owner, "ord-codes-rewrite", { ...regex("ord-[0-9]{6}"), action: "rewrite" })
      yield* create(owner, "no-legal", literal("legal action"))
      // Replacing a policy's only use of a pattern frees it for the new one.
      const edited = yield* replace(owner, "ref-codes", regex("ref-[0-9]{8}"))
      expect(edited.version).toBe(2)
      // ord- is still used by ord-codes-rewrite, so moving ord-codes to a new pattern would add one.
      yield* expectFailure(replace(owner, "ord-codes", regex("po-[0-9]{6}")), 409, "regex_limit_reached")
      const rolledBack = yield* owner.api.policies.rollbackPolicy({
        path: policyPath("ref-codes"),
        payload: { version: 1 }
      })
      expect(rolledBack.version).toBe(3)
      // Enabling and disabling never meet a limit: every stored policy already counts.
      yield* setEnabled(owner, "inv-codes", false)
      yield* setEnabled(owner, "inv-codes", true)
      // Deleting one frees its pattern.
      yield* owner.api.policies.deletePolicy({ path: policyPath("inv-codes") })
      yield* create(owner, "sku-codes", regex("sku-[0-9]{6}"))
    })
  )

  it.effect("the policy limit refuses a create or a pack install past it; deleting makes room again", () =>
    Effect.gen(function* () {
      const { owner } = yield* setUp
      for (let i = 1; i <= MAX_POLICIES - 1; i++) yield* create(owner, `phrase-${i}`, literal(`phrase ${i}`))
      // pii-basic ships three policies: one fits, so the whole install is refused and nothing is added.
      const refused = yield* expectFailure(
        owner.api.policies.installPolicyPack({ path: { name: "pii-basic" }, payload: { enabled: true } }),
        409,
        "policy_limit_reached"
      )
      expect(refused.message).toContain("MAX_POLICIES_PER_WORKSPACE")
      expect(refused.message).toContain(String(MAX_POLICIES))
      yield* create(owner, `phrase-${MAX_POLICIES}`, literal(`phrase ${MAX_POLICIES}`))
      yield* expectFailure(create(owner, "one-too-many", literal("one too many")), 409, "policy_limit_reached")
      expect(yield* listPolicies(owner)).toHaveLength(MAX_POLICIES)
      yield* owner.api.policies.deletePolicy({ path: policyPath("phrase-1") })
      yield* create(owner, "one-too-many", literal("one too many"))
    })
  )

  it.effect("red-team static policies past a limit are refused whole: none of them is created", () =>
    Effect.gen(function* () {
      const { owner } = yield* setUp
      yield* createAgent(owner, agentYaml("limit-bot", DEMO))
      // Six or more documents, four of them patterns: past both limits of this server.
      const refused = yield* Effect.flip(owner.api.redteam.generateStaticPolicies({ path: agentPath("limit-bot") }))
      expect(refused).toMatchObject({ code: expect.stringMatching(/^(policy|regex)_limit_reached$/) })
      expect(yield* listPolicies(owner)).toEqual([])
    })
  )

  it.effect("concurrent creates do not slip past the limit together", () =>
    Effect.gen(function* () {
      const { owner } = yield* setUp
      const prefixes = ["aa", "bb", "cc", "dd", "ee", "ff"]
      const outcomes = yield* Effect.forEach(
        prefixes,
        (prefix) => Effect.either(create(owner, `${prefix}-codes`, regex(`${prefix}-[0-9]{4}`))),
        { concurrency: "unbounded" }
      )
      expect(outcomes.filter((outcome) => outcome._tag === "Right")).toHaveLength(MAX_PATTERNS)
      for (const outcome of outcomes) {
        if (outcome._tag === "Left") expect(outcome.left).toMatchObject({ code: "regex_limit_reached" })
      }
      expect(yield* listPolicies(owner)).toHaveLength(MAX_PATTERNS)
    })
  )

  it.effect("a workspace at its limits leaves another workspace's allowance untouched", () =>
    Effect.gen(function* () {
      const { base, owner } = yield* setUp
      yield* fillPatterns(owner)
      yield* expectFailure(create(owner, "sku-codes", regex("sku-[0-9]{6}")), 409, "regex_limit_reached")
      yield* create(owner, "no-legal", literal("legal action"))
      yield* create(owner, "no-refund", literal("full refund"))
      yield* expectFailure(create(owner, "no-threats", literal("threat")), 409, "policy_limit_reached")
      const neighbour = yield* tenant(base)
      yield* fillPatterns(neighbour)
      yield* create(neighbour, "no-legal", literal("legal action"))
      yield* create(neighbour, "no-refund", literal("full refund"))
      expect(yield* listPolicies(neighbour)).toHaveLength(MAX_POLICIES)
    })
  )
})
