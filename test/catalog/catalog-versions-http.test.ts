/**
 * Versions of agent profiles, tool metadata and label policies over HTTP
 * against the real service and PostgreSQL: every create, replace or upsert
 * records a version with who and when, listed newest first; the history
 * outlives a delete and continues its numbering; unknown keys and other
 * workspaces answer 404.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { AgentId, Origin } from "../../src/catalog/Domain.js"
import { expectFailure } from "../support/Api.js"
import { agentYaml, createAgent, yamlBytes } from "../support/Events.js"
import { createKey, keyClient, tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"

const agentPath = (id: string) => ({ id: AgentId.make(id) })
const originPath = (origin: string) => ({ origin: Origin.make(origin) })

/** Each version's number, time and author are well-formed; answers the numbers. */
const numbersOf = (
  versions: ReadonlyArray<{
    readonly version: number
    readonly created_at: string
    readonly created_by: { readonly kind: string; readonly id: string }
  }>,
  author: { readonly kind: string; readonly id: string }
) => {
  for (const version of versions) {
    expect(version.created_by).toEqual(author)
    expect(Number.isNaN(Date.parse(version.created_at))).toBe(false)
  }
  return versions.map((version) => version.version)
}

layer(testServer("database"), SERVER_OPTIONS)("catalog versions over HTTP", (it) => {
  describe("GET /v1/agents/{id}/versions", () => {
    it.effect("create and each replace make a version with the profile; they outlive a delete", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const author = { kind: "user", id: owner.user_id }
        yield* createAgent(base, owner, "history-bot")
        const renamed = agentYaml("history-bot").replace("display_name: Support Bot", "display_name: Renamed Bot")
        yield* owner.api.agents.replaceAgent({ path: agentPath("history-bot"), payload: yamlBytes(renamed) })

        const { versions } = yield* owner.api.agents.listAgentVersions({
          path: agentPath("history-bot"),
          urlParams: {}
        })
        expect(numbersOf(versions, author)).toEqual([2, 1])
        expect(versions.map((version) => version.profile.display_name)).toEqual(["Renamed Bot", "Support Bot"])
        expect(versions[0]!.source_text).toBe(renamed)
        expect(versions[1]!.source_text).toBe(agentYaml("history-bot"))

        yield* owner.api.agents.deleteAgent({ path: agentPath("history-bot") })
        const kept = yield* owner.api.agents.listAgentVersions({ path: agentPath("history-bot"), urlParams: {} })
        expect(kept.versions.map((version) => version.version)).toEqual([2, 1])
        // Created again, it continues the numbering.
        yield* createAgent(base, owner, "history-bot")
        const again = yield* owner.api.agents.listAgentVersions({ path: agentPath("history-bot"), urlParams: {} })
        expect(again.versions.map((version) => version.version)).toEqual([3, 2, 1])

        // A PUT that fails (another agent_id in the document) makes no version.
        yield* expectFailure(
          owner.api.agents.replaceAgent({ path: agentPath("history-bot"), payload: yamlBytes(agentYaml("other")) }),
          400,
          "validation_failed"
        )
        expect(
          (yield* owner.api.agents.listAgentVersions({ path: agentPath("history-bot"), urlParams: {} })).versions
        ).toHaveLength(3)
        yield* expectFailure(
          owner.api.agents.listAgentVersions({ path: agentPath("nobody"), urlParams: {} }),
          404,
          "agent_not_found"
        )
        const stranger = yield* tenant(base)
        yield* expectFailure(
          stranger.api.agents.listAgentVersions({ path: agentPath("history-bot"), urlParams: {} }),
          404
        )
      })
    )
  })

  describe("GET /v1/tool-metadata/{tool}/versions", () => {
    it.effect("each upsert makes a version with the entry; runtime keys read them; they outlive a delete", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const tool = { tool: "send_money", reversible: false, side_effect: "payment" }
        yield* owner.api.toolMetadata.upsertToolMetadata({ payload: tool })
        yield* owner.api.toolMetadata.upsertToolMetadata({ payload: { ...tool, reversible: true, enabled: false } })

        const { versions } = yield* owner.api.toolMetadata.listToolMetadataVersions({
          path: { tool: "send_money" },
          urlParams: {}
        })
        expect(numbersOf(versions, { kind: "user", id: owner.user_id })).toEqual([2, 1])
        expect(versions.map((version) => [version.enabled, version.metadata.reversible])).toEqual([
          [false, true],
          [true, false]
        ])
        expect(versions[1]!.metadata).toEqual(tool)

        yield* owner.api.toolMetadata.deleteToolMetadata({ path: { tool: "send_money" } })
        expect(
          (yield* owner.api.toolMetadata.listToolMetadataVersions({ path: { tool: "send_money" }, urlParams: {} }))
            .versions
        ).toHaveLength(2)
        // Runtime keys may read versions (tool metadata is read-only to keys).
        const key = yield* createKey(owner)
        const keyApi = yield* keyClient(base, key)
        expect(
          (yield* keyApi.toolMetadata.listToolMetadataVersions({ path: { tool: "send_money" }, urlParams: {} }))
            .versions
        ).toHaveLength(2)
        yield* expectFailure(
          owner.api.toolMetadata.listToolMetadataVersions({ path: { tool: "never_seen" }, urlParams: {} }),
          404,
          "tool_not_found"
        )
        const stranger = yield* tenant(base)
        yield* expectFailure(
          stranger.api.toolMetadata.listToolMetadataVersions({ path: { tool: "send_money" }, urlParams: {} }),
          404
        )
      })
    )
  })

  describe("GET /v1/label-policies/{origin}/versions", () => {
    it.effect("each upsert makes a version with the policy; they outlive a delete", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        yield* owner.api.labelPolicies.upsertLabelPolicy({ payload: { origin: Origin.make("web_page"), trust: "low" } })
        yield* owner.api.labelPolicies.upsertLabelPolicy({
          payload: { origin: Origin.make("web_page"), trust: "untrusted", integrity: "low" }
        })
        yield* owner.api.labelPolicies.deleteLabelPolicy({ path: originPath("web_page") })

        const { versions } = yield* owner.api.labelPolicies.listLabelPolicyVersions({
          path: originPath("web_page"),
          urlParams: {}
        })
        expect(numbersOf(versions, { kind: "user", id: owner.user_id })).toEqual([2, 1])
        expect(versions.map((version) => version.policy)).toEqual([
          { origin: "web_page", confidentiality: null, integrity: "low", trust: "untrusted" },
          { origin: "web_page", confidentiality: null, integrity: null, trust: "low" }
        ])
        expect(versions.every((version) => version.enabled)).toBe(true)
        yield* expectFailure(
          owner.api.labelPolicies.listLabelPolicyVersions({ path: originPath("never_seen"), urlParams: {} }),
          404,
          "label_policy_not_found"
        )
      })
    )
  })
})
