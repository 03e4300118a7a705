/**
 * `require_impact_before_enable` over HTTP: with the setting on, every path
 * that enables a policy (create enabled, enable, batch enable, PUT, rollback,
 * pack install, a regeneration from an agent profile that changes an enabled
 * policy) answers 409 `impact_required` until an impact replay of that
 * very document has completed (within 24 hours, having replayed a decision
 * unless the workspace has none), and then succeeds; with it off (the
 * default) nothing changes.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { AgentId, PolicyId } from "../../src/catalog/Domain.js"
import { expectFailure } from "../support/Api.js"
import { createAgent, policyDocument, propose, reply, yamlBytes } from "../support/Events.js"
import { tenant } from "../support/Tenants.js"
import { queryDatabase } from "../support/Database.js"
import { baseUrl, SERVER_OPTIONS, TestDatabaseUrl, testServerWithDatabase } from "../support/TestServer.js"
import { aroundNow, replay } from "./impact-helpers.js"

const path = (id: string) => ({ id: PolicyId.make(id) })

/** A profile whose one generated policy is `<agent>.cannot-promise.full-refund`, with `phrase` as its literal. */
const profileYaml = (agentId: string, phrase: string) =>
  yamlBytes(
    `agent_id: ${agentId}\ndisplay_name: Gate Bot\nauthority:\n  cannot_promise: ["${phrase}"]\nscope: {}\ntone:\n  target: neutral\n`
  )

layer(testServerWithDatabase("database"), SERVER_OPTIONS)("require_impact_before_enable over HTTP", (it) => {
  describe("the gate on every enabling path", () => {
    it.effect("409 impact_required on each path until a replay of the document completed, then OK", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const policies = owner.api.policies
        // Off by default: creating enabled needs nothing.
        expect((yield* owner.api.settings.getSettings({})).require_impact_before_enable).toBe(false)
        yield* policies.createPolicy({ payload: yamlBytes(policyDocument("free", { value: "free" })) })
        const on = yield* owner.api.settings.updateSettings({ payload: { require_impact_before_enable: true } })
        expect(on.require_impact_before_enable).toBe(true)

        // Create enabled: refused; create disabled: fine.
        const docA = policyDocument("p1", { value: "alpha", enabled: false })
        const refused = yield* expectFailure(
          policies.createPolicy({ payload: yamlBytes(policyDocument("p1", { value: "alpha" })) }),
          409,
          "impact_required"
        )
        expect(refused.message).toContain("POST /v1/policies/impact")
        expect(refused.details?.map((detail) => detail.path)).toEqual(["p1"])
        yield* policies.createPolicy({ payload: yamlBytes(docA) })

        // Enable and batch enable: refused until a replay with p1 in enable_ids completed.
        yield* expectFailure(
          policies.setPolicyEnabled({ path: path("p1"), payload: { enabled: true } }),
          409,
          "impact_required"
        )
        yield* expectFailure(
          policies.setPoliciesEnabled({ payload: { ids: [PolicyId.make("p1")], enabled: true } }),
          409,
          "impact_required"
        )
        expect((yield* policies.getPolicy({ path: path("p1") })).enabled).toBe(false)
        const first = yield* replay(owner, { enable_ids: ["p1"], ...aroundNow() })
        expect(first.document_digests).toHaveLength(1)
        expect((yield* policies.setPolicyEnabled({ path: path("p1"), payload: { enabled: true } })).enabled).toBe(true)
        // Enabling what is on already, and disabling, need nothing.
        yield* policies.setPoliciesEnabled({
          payload: { ids: [PolicyId.make("p1"), PolicyId.make("free")], enabled: true }
        })
        yield* policies.setPolicyEnabled({ path: path("free"), payload: { enabled: false } })

        // PUT of a new document on an enabled policy: refused until that document was replayed.
        const docB = policyDocument("p1", { value: "beta" })
        yield* expectFailure(
          policies.replacePolicy({ path: path("p1"), payload: yamlBytes(docB) }),
          409,
          "impact_required"
        )
        yield* replay(owner, { candidate_policies: [docB], ...aroundNow() })
        expect((yield* policies.replacePolicy({ path: path("p1"), payload: yamlBytes(docB) })).version).toBe(2)
        // `enabled` is not part of what was replayed: the same document turned on explicitly passes too.
        const docBOn = policyDocument("p1", { value: "beta", enabled: true })
        expect((yield* policies.replacePolicy({ path: path("p1"), payload: yamlBytes(docBOn) })).version).toBe(3)
        // Rollback to version 1 (document A, replayed above) as the next version: fine.
        const rolled = yield* policies.rollbackPolicy({ path: path("p1"), payload: { version: 1 } })
        expect(rolled).toMatchObject({ version: 4, enabled: false })

        // A rollback to a document never replayed, leaving the policy enabled: refused.
        yield* owner.api.settings.updateSettings({ payload: { require_impact_before_enable: false } })
        const docC = policyDocument("p1", { value: "gamma", enabled: true })
        yield* policies.replacePolicy({ path: path("p1"), payload: yamlBytes(docC) })
        yield* policies.replacePolicy({ path: path("p1"), payload: yamlBytes(docBOn) })
        yield* owner.api.settings.updateSettings({ payload: { require_impact_before_enable: true } })
        yield* expectFailure(
          policies.rollbackPolicy({ path: path("p1"), payload: { version: 5 } }),
          409,
          "impact_required"
        )
        expect((yield* policies.getPolicy({ path: path("p1") })).version).toBe(6)

        // Pack install: enabled is refused, disabled is fine.
        const pack = (yield* policies.listPolicyPacks({})).packs[0]!
        yield* expectFailure(
          policies.installPolicyPack({ path: { name: pack.name }, payload: { enabled: true } }),
          409,
          "impact_required"
        )
        const installed = yield* policies.installPolicyPack({ path: { name: pack.name }, payload: {} })
        expect(installed.installed.every((policy) => !policy.enabled)).toBe(true)
        // Replaying the installed policies lets them be enabled, all at once.
        const ids = installed.installed.map((policy) => policy.id)
        yield* expectFailure(policies.setPoliciesEnabled({ payload: { ids, enabled: true } }), 409, "impact_required")
        yield* replay(owner, { enable_ids: ids, ...aroundNow() })
        const enabled = yield* policies.setPoliciesEnabled({ payload: { ids, enabled: true } })
        expect(enabled.policies.every((policy) => policy.enabled)).toBe(true)
      })
    )

    it.effect("regenerating an enabled generated policy with a new document needs a replay of that document", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const agents = owner.api.agents
        const policies = owner.api.policies
        yield* owner.api.settings.updateSettings({ payload: { require_impact_before_enable: true } })
        yield* agents.createAgent({ payload: profileYaml("gate-bot", "full refund") })
        const generate = agents.generateAgentGuardrails({ path: { id: AgentId.make("gate-bot") } })
        const [generated] = (yield* generate).generated
        const id = generated!.id
        // Generated disabled: no replay needed; enabling it needs one.
        yield* expectFailure(
          policies.setPolicyEnabled({ path: path(id), payload: { enabled: true } }),
          409,
          "impact_required"
        )
        yield* replay(owner, { enable_ids: [id], ...aroundNow() })
        yield* policies.setPolicyEnabled({ path: path(id), payload: { enabled: true } })
        // Regenerating the same document changes nothing and passes.
        expect((yield* generate).generated[0]).toMatchObject({ id, enabled: true, version: 1 })

        // The profile now spells the phrase differently: same id, a new document that would go live at once.
        yield* agents.replaceAgent({
          path: { id: AgentId.make("gate-bot") },
          payload: profileYaml("gate-bot", "Full Refund")
        })
        const refused = yield* expectFailure(generate, 409, "impact_required")
        expect(refused.details?.map((detail) => detail.path)).toEqual([id])
        const kept = yield* policies.getPolicy({ path: path(id) })
        expect(kept).toMatchObject({ enabled: true, version: 1 })
        expect(kept.source_yaml).toContain("full refund")

        // Disabled, it regenerates; the new document is enabled after its own replay.
        yield* policies.setPolicyEnabled({ path: path(id), payload: { enabled: false } })
        expect((yield* generate).generated[0]).toMatchObject({ id, enabled: false, version: 2 })
        yield* replay(owner, { enable_ids: [id], ...aroundNow() })
        expect((yield* policies.setPolicyEnabled({ path: path(id), payload: { enabled: true } })).enabled).toBe(true)
      })
    )

    it.effect("a replay vouches for 24 hours: aged past that, enabling is refused again", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const policies = owner.api.policies
        yield* owner.api.settings.updateSettings({ payload: { require_impact_before_enable: true } })
        yield* policies.createPolicy({ payload: yamlBytes(policyDocument("late", { value: "late", enabled: false })) })
        const job = yield* replay(owner, { enable_ids: ["late"], ...aroundNow() })
        // The job finished 25 hours ago, as far as the database knows.
        yield* queryDatabase(
          yield* TestDatabaseUrl,
          "update impact_jobs set finished_at = now() - interval '25 hours' where id = $1",
          [job.id]
        )
        yield* expectFailure(
          policies.setPolicyEnabled({ path: path("late"), payload: { enabled: true } }),
          409,
          "impact_required"
        )
        yield* replay(owner, { enable_ids: ["late"], ...aroundNow() })
        expect((yield* policies.setPolicyEnabled({ path: path("late"), payload: { enabled: true } })).enabled).toBe(
          true
        )
      })
    )

    it.effect("a replay over a window without decisions vouches only while the workspace has none", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const policies = owner.api.policies
        yield* owner.api.settings.updateSettings({ payload: { require_impact_before_enable: true } })
        yield* policies.createPolicy({
          payload: yamlBytes(policyDocument("quiet", { value: "quiet", enabled: false }))
        })
        yield* createAgent(base, owner, "gate-bot")
        yield* propose(base, owner, "gate-bot", reply("hello"))
        // A window a year back holds none of the workspace's decisions: it shows nothing of the impact.
        const yearAgo = Date.now() - 365 * 24 * 3_600_000
        const empty = yield* replay(owner, {
          enable_ids: ["quiet"],
          start: new Date(yearAgo).toISOString(),
          end: new Date(yearAgo + 60_000).toISOString()
        })
        expect(empty.progress.replayed).toBe(0)
        const refused = yield* expectFailure(
          policies.setPolicyEnabled({ path: path("quiet"), payload: { enabled: true } }),
          409,
          "impact_required"
        )
        expect(refused.message).toContain("a replay of none vouches only while the workspace has none")
        const replayed = yield* replay(owner, { enable_ids: ["quiet"], ...aroundNow() })
        expect(replayed.progress.replayed).toBe(1)
        expect((yield* policies.setPolicyEnabled({ path: path("quiet"), payload: { enabled: true } })).enabled).toBe(
          true
        )
      })
    )

    it.effect("a replay that skipped every decision (kept as metadata only) vouches for nothing", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const policies = owner.api.policies
        yield* createAgent(base, owner, "digest-bot")
        yield* owner.api.settings.updateSettings({ payload: { data_handling_mode: "metadata_only" } })
        yield* propose(base, owner, "digest-bot", reply("kept as a digest"))
        yield* owner.api.settings.updateSettings({
          payload: { data_handling_mode: "redacted", require_impact_before_enable: true }
        })
        yield* policies.createPolicy({
          payload: yamlBytes(policyDocument("unseen", { value: "digest", enabled: false }))
        })
        // The window's one decision kept no input: the replay saw nothing of the document's impact.
        const skipped = yield* replay(owner, { enable_ids: ["unseen"], ...aroundNow() })
        expect(skipped.result).toMatchObject({ decisions_replayed: 0, skipped: 1 })
        const blocked = yield* expectFailure(
          policies.setPolicyEnabled({ path: path("unseen"), payload: { enabled: true } }),
          409,
          "impact_required"
        )
        expect(blocked.message).not.toContain("metadata_only")
        // Back under metadata_only no replay can vouch: the refusal says how out instead of asking for one.
        yield* owner.api.settings.updateSettings({ payload: { data_handling_mode: "metadata_only" } })
        const stuck = yield* expectFailure(
          policies.setPolicyEnabled({ path: path("unseen"), payload: { enabled: true } }),
          409,
          "impact_required"
        )
        expect(stuck.message).toContain("data_handling_mode is metadata_only")
        expect(stuck.message).toContain("turn require_impact_before_enable off")
        yield* owner.api.settings.updateSettings({ payload: { data_handling_mode: "redacted" } })
        yield* propose(base, owner, "digest-bot", reply("kept redacted"))
        const seen = yield* replay(owner, { enable_ids: ["unseen"], ...aroundNow() })
        expect(seen.result).toMatchObject({ decisions_replayed: 1, skipped: 1 })
        expect((yield* policies.setPolicyEnabled({ path: path("unseen"), payload: { enabled: true } })).enabled).toBe(
          true
        )
      })
    )
  })
})
