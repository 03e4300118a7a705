/**
 * Policy versions over HTTP against the real service and PostgreSQL: PUT
 * replaces a document as the next version (and changes decisions), the
 * versions list (newest first, with who), rollback as a new version, the
 * history outliving a delete, and findings naming the version that matched.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { expectFailure, expectInvalid } from "../support/Api.js"
import { createAgent, policyDocument, propose, reply, yamlBytes } from "../support/Events.js"
import { createKey, keyClient, tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import { agentPath, policyPath } from "./catalog-helpers.js"

const AGENT = "versions-bot"

layer(testServer("database"), SERVER_OPTIONS)("policy versions over HTTP", (it) => {
  describe("PUT, versions, rollback", () => {
    it.effect("PUT makes version 2 and changes decisions; rollback to 1 makes version 3 with v1's document", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        yield* createAgent(base, owner, AGENT)
        const v1 = policyDocument("no-refund", { value: "gift voucher" })
        const created = yield* owner.api.policies.createPolicy({ payload: yamlBytes(v1) })
        expect(created.version).toBe(1)
        const first = yield* propose(base, owner, AGENT, reply("You get a gift voucher."))
        expect(first.effect).toBe("deny")
        expect(first.findings[0]?.policy_version).toBe(1)

        const v2 = policyDocument("no-refund", { value: "store credit", description: "No store credit" })
        const replaced = yield* owner.api.policies.replacePolicy({
          path: policyPath("no-refund"),
          payload: yamlBytes(v2)
        })
        expect(replaced).toMatchObject({ id: "no-refund", version: 2, enabled: true, source_yaml: v2 })
        expect((yield* owner.api.policies.getPolicy({ path: policyPath("no-refund") })).version).toBe(2)
        expect((yield* propose(base, owner, AGENT, reply("You get a gift voucher."))).effect).toBe("permit")
        const second = yield* propose(base, owner, AGENT, reply("Have some store credit."))
        expect(second.effect).toBe("deny")
        expect(second.findings[0]?.policy_version).toBe(2)

        const rolled = yield* owner.api.policies.rollbackPolicy({
          path: policyPath("no-refund"),
          payload: { version: 1 }
        })
        expect(rolled).toMatchObject({ version: 3, source_yaml: v1, description: "policy no-refund" })
        const third = yield* propose(base, owner, AGENT, reply("You get a gift voucher."))
        expect(third.effect).toBe("deny")
        expect(third.findings[0]?.policy_version).toBe(3)

        const { versions } = yield* owner.api.policies.listPolicyVersions({
          path: policyPath("no-refund"),
          urlParams: {}
        })
        expect(versions.map((version) => version.version)).toEqual([3, 2, 1])
        expect(versions.map((version) => version.source_yaml)).toEqual([v1, v2, v1])
        for (const version of versions) {
          expect(version.created_by).toEqual({ kind: "user", id: owner.user_id })
          expect(version.enabled).toBe(true)
          expect(Number.isNaN(Date.parse(version.created_at))).toBe(false)
        }
      })
    )

    it.effect("enabled keeps its value unless the document gives it; a key's version names the key", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        yield* owner.api.policies.createPolicy({
          payload: yamlBytes(policyDocument("p", { value: "a", enabled: false }))
        })
        const kept = yield* owner.api.policies.replacePolicy({
          path: policyPath("p"),
          payload: yamlBytes(policyDocument("p", { value: "b" }))
        })
        expect(kept).toMatchObject({ version: 2, enabled: false })
        const turnedOn = yield* owner.api.policies.replacePolicy({
          path: policyPath("p"),
          payload: yamlBytes(policyDocument("p", { value: "c", enabled: true }))
        })
        expect(turnedOn).toMatchObject({ version: 3, enabled: true })
        const { versions } = yield* owner.api.policies.listPolicyVersions({ path: policyPath("p"), urlParams: {} })
        expect(versions.map((version) => [version.version, version.enabled])).toEqual([
          [3, true],
          [2, false],
          [1, false]
        ])
        // A runtime key may read versions (policies are read-only to keys).
        const key = yield* createKey(owner)
        const keyApi = yield* keyClient(base, key)
        expect(
          (yield* keyApi.policies.listPolicyVersions({ path: policyPath("p"), urlParams: {} })).versions
        ).toHaveLength(3)
      })
    )

    it.effect(
      "PUT: another id in the document is 400 at id; an unknown policy is 404; rollback to an unknown version is 404",
      () =>
        Effect.gen(function* () {
          const base = yield* baseUrl
          const owner = yield* tenant(base)
          yield* owner.api.policies.createPolicy({ payload: yamlBytes(policyDocument("mine", { value: "x" })) })
          yield* expectInvalid(
            owner.api.policies.replacePolicy({
              path: policyPath("mine"),
              payload: yamlBytes(policyDocument("other", { value: "x" }))
            }),
            "id"
          )
          yield* expectInvalid(
            owner.api.policies.replacePolicy({
              path: policyPath("mine"),
              payload: yamlBytes("id: mine\nfamily: nope\n")
            }),
            "family"
          )
          yield* expectFailure(
            owner.api.policies.replacePolicy({
              path: policyPath("nobody"),
              payload: yamlBytes(policyDocument("nobody", { value: "x" }))
            }),
            404,
            "policy_not_found"
          )
          yield* expectFailure(
            owner.api.policies.rollbackPolicy({ path: policyPath("mine"), payload: { version: 7 } }),
            404,
            "policy_version_not_found"
          )
          yield* expectFailure(
            owner.api.policies.listPolicyVersions({ path: policyPath("nobody"), urlParams: {} }),
            404,
            "policy_not_found"
          )
          // Nothing above made a version.
          expect(
            (yield* owner.api.policies.listPolicyVersions({ path: policyPath("mine"), urlParams: {} })).versions
          ).toHaveLength(1)
        })
    )

    it.effect("versions outlive a delete; the id created again continues the numbering", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        yield* owner.api.policies.createPolicy({ payload: yamlBytes(policyDocument("gone", { value: "x" })) })
        yield* owner.api.policies.replacePolicy({
          path: policyPath("gone"),
          payload: yamlBytes(policyDocument("gone", { value: "y" }))
        })
        yield* owner.api.policies.deletePolicy({ path: policyPath("gone") })
        yield* expectFailure(owner.api.policies.getPolicy({ path: policyPath("gone") }), 404)
        const { versions } = yield* owner.api.policies.listPolicyVersions({ path: policyPath("gone"), urlParams: {} })
        expect(versions.map((version) => version.version)).toEqual([2, 1])
        const again = yield* owner.api.policies.createPolicy({
          payload: yamlBytes(policyDocument("gone", { value: "z" }))
        })
        expect(again.version).toBe(3)
        // Another workspace sees none of it.
        const stranger = yield* tenant(base)
        yield* expectFailure(stranger.api.policies.listPolicyVersions({ path: policyPath("gone"), urlParams: {} }), 404)
      })
    )

    it.effect("a pack install and generated policies record version 1", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const installed = yield* owner.api.policies.installPolicyPack({ path: { name: "secrets" }, payload: {} })
        const id = installed.installed[0]!.id
        const { versions } = yield* owner.api.policies.listPolicyVersions({ path: policyPath(id), urlParams: {} })
        expect(versions.map((version) => [version.version, version.created_by.kind])).toEqual([[1, "user"]])
        yield* createAgent(base, owner, AGENT)
        const generated = yield* owner.api.agents.generateAgentGuardrails({ path: agentPath(AGENT) })
        for (const policy of generated.generated) expect(policy.version).toBe(1)
        // Generating again from the same profile changes nothing, so makes no version.
        const again = yield* owner.api.agents.generateAgentGuardrails({ path: agentPath(AGENT) })
        for (const policy of again.generated) expect(policy.version).toBe(1)
      })
    )
  })
})
