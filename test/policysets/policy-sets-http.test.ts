/**
 * Policy-set digests over HTTP against the real service and PostgreSQL:
 * each decision's receipt (a signed claim) and trace name the set that
 * decided; `GET /v1/policy-sets/{digest}` explains an old receipt after its
 * policy changed; the digest follows exactly what decides (agent profile,
 * default_action, tool metadata, label policies) and nothing else; a dry run
 * reports the digest of what it evaluated and stores nothing.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { AgentId, Origin, PolicyId } from "../../src/catalog/Domain.js"
import { expectFailure, type GuardrailClient } from "../support/Api.js"
import {
  agentYaml,
  createAgent,
  createPolicy,
  type Decision,
  eventBody,
  policyDocument,
  propose,
  reply,
  yamlBytes
} from "../support/Events.js"
import { until } from "../support/Eventually.js"
import { call } from "../support/Raw.js"
import { createKey, keyClient, tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"

const AGENT = "digest-bot"
const DIGEST = /^[0-9a-f]{64}$/

/** The digest a decision's receipt names, checked against its signed claims and its trace. */
const digestOf = (api: GuardrailClient, decision: Decision) =>
  Effect.gen(function* () {
    const receipt = yield* api.receipts.getReceipt({ path: { id: decision.receipt_id } })
    const claims = JSON.parse(Buffer.from(receipt.jws.split(".")[1]!, "base64url").toString("utf8")) as {
      readonly policy_set_digest: unknown
    }
    expect(receipt.policy_set_digest).toMatch(DIGEST)
    expect(claims.policy_set_digest).toBe(receipt.policy_set_digest)
    const { traces } = yield* api.traces.listTraces({ urlParams: {} })
    expect(traces.find((trace) => trace.trace_id === decision.trace_id)?.policy_set_digest).toBe(
      receipt.policy_set_digest
    )
    return receipt.policy_set_digest!
  })

const getSet = (api: GuardrailClient, digest: string) => api.policySets.getPolicySet({ path: { digest } })

layer(testServer("database"), SERVER_OPTIONS)("policy sets over HTTP", (it) => {
  describe("GET /v1/policy-sets/{digest}", () => {
    it.effect("explains a receipt through its policy_set_digest after the policy was changed twice", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        yield* createAgent(base, owner, AGENT)
        const v1 = policyDocument("no-voucher", { value: "gift voucher" })
        yield* owner.api.policies.createPolicy({ payload: yamlBytes(v1) })
        const first = yield* propose(base, owner, AGENT, reply("Take this gift voucher."))
        expect(first.effect).toBe("deny")
        const firstDigest = yield* digestOf(owner.api, first)

        const path = { id: PolicyId.make("no-voucher") }
        const v2 = policyDocument("no-voucher", { value: "store credit" })
        const v3 = policyDocument("no-voucher", { value: "coupon", description: "No coupons" })
        yield* owner.api.policies.replacePolicy({ path, payload: yamlBytes(v2) })
        yield* owner.api.policies.replacePolicy({ path, payload: yamlBytes(v3) })
        const later = yield* propose(base, owner, AGENT, reply("Take this gift voucher."))
        expect(later.effect).toBe("permit")
        const laterDigest = yield* digestOf(owner.api, later)
        expect(laterDigest).not.toBe(firstDigest)
        // Explained even once the policy is gone.
        yield* owner.api.policies.deletePolicy({ path })

        const explained = yield* getSet(owner.api, firstDigest)
        expect(explained.digest).toBe(firstDigest)
        expect(explained.policies).toHaveLength(1)
        expect(explained.policies[0]).toMatchObject({
          id: "no-voucher",
          version: 1,
          source_yaml: v1,
          enabled: true,
          created_by: { kind: "user", id: owner.user_id }
        })
        expect(explained.policies[0]!.document).toMatchObject({ id: "no-voucher", match: { value: "gift voucher" } })
        expect(explained.agent).toMatchObject({ agent_id: AGENT, version: 1, source_text: agentYaml(AGENT) })
        expect(explained.agent?.profile.display_name).toBe("Support Bot")
        expect(explained.default_action).toBe("permit")
        expect(explained.checker_modes).toMatchObject({ content: "enforce", profile: "enforce" })
        expect(explained.detectors_version.length).toBeGreaterThan(0)
        expect(explained.tool_metadata).toEqual([])
        expect(explained.label_policies).toEqual([])
        expect(Number.isNaN(Date.parse(explained.created_at))).toBe(false)

        const current = yield* getSet(owner.api, laterDigest)
        expect(current.policies.map((policy) => [policy.version, policy.source_yaml])).toEqual([[3, v3]])
      })
    )

    it.effect("a policy created disabled and enabled later shows as enabled in the sets it decided in", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        yield* createAgent(base, owner, AGENT)
        const document = policyDocument("later-on", { value: "gift voucher", enabled: false })
        yield* owner.api.policies.createPolicy({ payload: yamlBytes(document) })
        // Turning it on records no version: version 1 was written disabled.
        yield* owner.api.policies.setPolicyEnabled({
          path: { id: PolicyId.make("later-on") },
          payload: { enabled: true }
        })
        const decided = yield* propose(base, owner, AGENT, reply("Take this gift voucher."))
        expect(decided.effect).toBe("deny")
        const explained = yield* getSet(owner.api, yield* digestOf(owner.api, decided))
        expect(explained.policies.map(({ enabled, id, version }) => ({ id, version, enabled }))).toEqual([
          { id: "later-on", version: 1, enabled: true }
        ])
      })
    )

    it.effect("an unknown digest is 404, a malformed one 400; another workspace's is 404; runtime keys read", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const decision = yield* propose(base, owner, AGENT, reply("Hello."))
        const digest = yield* digestOf(owner.api, decision)
        yield* expectFailure(getSet(owner.api, "0".repeat(64)), 404, "policy_set_not_found")
        // The typed client refuses a malformed digest itself: sent raw, the service answers 400.
        for (const malformed of ["not-a-digest", digest.toUpperCase(), `${digest}0`]) {
          const answer = yield* call(base, "GET", `/v1/policy-sets/${malformed}`, { token: owner.jwt })
          expect(answer.status, answer.text).toBe(400)
          expect(answer.text).toContain("validation_failed")
        }
        const stranger = yield* tenant(base)
        yield* expectFailure(getSet(stranger.api, digest), 404, "policy_set_not_found")
        const keyApi = yield* keyClient(base, yield* createKey(owner))
        expect((yield* getSet(keyApi, digest)).digest).toBe(digest)
      })
    )
  })

  describe("GET /openapi.json", () => {
    it.effect("lists the policy-set and versions endpoints", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const doc = (yield* call(base, "GET", "/openapi.json")).body as { readonly paths: Record<string, unknown> }
        for (const path of [
          "/v1/policy-sets/{digest}",
          "/v1/agents/{id}/versions",
          "/v1/tool-metadata/{tool}/versions",
          "/v1/label-policies/{origin}/versions"
        ]) {
          expect(Object.keys(doc.paths)).toContain(path)
        }
      })
    )
  })

  describe("what the digest follows", () => {
    it.effect(
      "stays while nothing changes; changes with the agent profile, default_action, tool metadata and label policies",
      () =>
        Effect.gen(function* () {
          const base = yield* baseUrl
          const owner = yield* tenant(base)
          yield* createAgent(base, owner, AGENT)
          yield* createPolicy(base, owner, "no-voucher", { value: "gift voucher" })
          const decide = (content = "Your order ships tomorrow.") =>
            Effect.flatMap(propose(base, owner, AGENT, reply(content)), (decision) => digestOf(owner.api, decision))

          const initial = yield* decide()
          // The same set decides another event, and the same event again: one digest.
          expect(yield* decide()).toBe(initial)
          expect(yield* decide("Take this gift voucher.")).toBe(initial)
          // A policy another agent owns does not decide for this one.
          yield* createPolicy(base, owner, "other-only", { value: "anything", owner: "other-bot" })
          expect(yield* decide()).toBe(initial)

          const renamed = agentYaml(AGENT).replace("display_name: Support Bot", "display_name: Renamed Bot")
          yield* owner.api.agents.replaceAgent({ path: { id: AgentId.make(AGENT) }, payload: yamlBytes(renamed) })
          const profiled = yield* decide()
          expect(profiled).not.toBe(initial)
          expect((yield* getSet(owner.api, profiled)).agent?.version).toBe(2)

          // Settings reach decisions through a cached runtime config: wait for the default action to apply.
          yield* owner.api.settings.updateSettings({ payload: { default_action: "deny" } })
          const denying = yield* until(
            Effect.gen(function* () {
              const decision = yield* propose(base, owner, AGENT, reply("Your order ships tomorrow."))
              expect(decision.domain).toBe("default")
              return yield* digestOf(owner.api, decision)
            })
          )
          expect(denying).not.toBe(profiled)
          expect((yield* getSet(owner.api, denying)).default_action).toBe("deny")
          // Back to permit: the very set that decided before, so the same digest.
          yield* owner.api.settings.updateSettings({ payload: { default_action: "permit" } })
          const permitting = yield* until(
            Effect.gen(function* () {
              const decision = yield* propose(base, owner, AGENT, reply("Your order ships tomorrow."))
              expect(decision.domain).not.toBe("default")
              return yield* digestOf(owner.api, decision)
            })
          )
          expect(permitting).toBe(profiled)

          yield* owner.api.toolMetadata.upsertToolMetadata({
            payload: { tool: "send_money", reversible: false, side_effect: "payment" }
          })
          const tooled = yield* decide()
          expect(tooled).not.toBe(profiled)
          expect((yield* getSet(owner.api, tooled)).tool_metadata).toMatchObject([
            { tool: "send_money", version: 1, enabled: true, metadata: { side_effect: "payment" } }
          ])

          yield* owner.api.labelPolicies.upsertLabelPolicy({ payload: { origin: Origin.make("web"), trust: "low" } })
          const labelled = yield* decide()
          expect(labelled).not.toBe(tooled)
          expect((yield* getSet(owner.api, labelled)).label_policies).toMatchObject([
            { origin: "web", version: 1, policy: { origin: "web", trust: "low" } }
          ])
        })
    )
  })

  describe("POST /v1/events/evaluate", () => {
    it.effect("reports the digest of the set it evaluated, candidates included, and stores none", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        yield* createAgent(base, owner, AGENT)
        const live = yield* createPolicy(base, owner, "no-voucher", { value: "gift voucher" })
        const liveDigest = yield* digestOf(owner.api, yield* propose(base, owner, AGENT, reply("Hello.")))

        const event = eventBody(owner, AGENT, reply("Take this coupon."))
        const same = yield* owner.api.events.evaluateEvent({ payload: event })
        expect(same.policy_set_digest).toBe(liveDigest)

        const candidate = policyDocument("no-coupon", { value: "coupon" })
        const withCandidate = yield* owner.api.events.evaluateEvent({
          payload: { ...event, candidate_policies: [candidate] }
        })
        expect(withCandidate.effect).toBe("deny")
        expect(withCandidate.policy_set_digest).toMatch(DIGEST)
        expect(withCandidate.policy_set_digest).not.toBe(liveDigest)
        const again = yield* owner.api.events.evaluateEvent({ payload: { ...event, candidate_policies: [candidate] } })
        expect(again.policy_set_digest).toBe(withCandidate.policy_set_digest)
        // Another candidate text under the same id is another set.
        const other = yield* owner.api.events.evaluateEvent({
          payload: { ...event, candidate_policies: [policyDocument("no-coupon", { value: "coupons" })] }
        })
        expect(other.policy_set_digest).not.toBe(withCandidate.policy_set_digest)
        const disabled = yield* owner.api.events.evaluateEvent({
          payload: { ...event, disable_policy_ids: [live.id] }
        })
        expect(disabled.policy_set_digest).not.toBe(liveDigest)

        // Nothing of a dry run is stored.
        for (const digest of [withCandidate.policy_set_digest!, disabled.policy_set_digest!]) {
          yield* expectFailure(getSet(owner.api, digest), 404, "policy_set_not_found")
        }
      })
    )
  })
})
