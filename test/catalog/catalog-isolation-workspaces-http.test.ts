/**
 * Tenant isolation for the catalog over HTTP: two users, each with a
 * workspace holding agents, generated and authored policies, label policies,
 * tool metadata and knowledge sources, some under the same ids. Every by-id
 * route answers 404 with the other workspace's ids and changes nothing there;
 * lists never leak; the same ids live independently in each workspace; a
 * user's second workspace has a catalog of its own. What a runtime key and
 * an anonymous caller may do is in catalog-isolation-access-http.test.ts.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { type Caller, clientAt, expectFailure, withRaw } from "../support/Api.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import {
  agentPath,
  createAgent,
  createPolicy,
  expectErrorShape,
  generate,
  getAgent,
  getPolicy,
  minimalAgentYaml,
  policyPath,
  policyYaml,
  setEnabled
} from "./catalog-helpers.js"
import { yamlBytes } from "../support/Events.js"
import {
  type Attempt,
  byIdAttempts,
  catalogOf,
  labelPath,
  list,
  LISTS,
  populated,
  toolPath
} from "./catalog-isolation-support.js"

layer(testServer("database"), SERVER_OPTIONS)("catalog tenant isolation and access", (it) => {
  describe("across workspaces", () => {
    it.effect("every by-id route answers 404 with the other workspace's ids, and changes nothing there", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const alpha = yield* populated(base, "alpha")
        const beta = yield* populated(base, "beta")
        const before = yield* catalogOf(beta)

        for (const [route, attempt] of byIdAttempts(beta)) {
          const error = yield* expectFailure(attempt(alpha.owner.api), 404)
          expectErrorShape(error)
          // Error messages may echo the requested id, never the other workspace's content.
          expect(JSON.stringify(error), route).not.toContain("beta ")
        }
        // A batch mixing an own id with the other workspace's: 404, and the own policy is unchanged too.
        yield* expectFailure(
          alpha.owner.api.policies.setPoliciesEnabled({
            payload: { enabled: true, ids: ["alpha-off-policy", "beta-off-policy"] }
          }),
          404,
          "policy_not_found"
        )
        expect((yield* getPolicy(alpha.owner, "alpha-off-policy")).enabled).toBe(false)
        expect((yield* getPolicy(alpha.owner, alpha.enabledGenerated)).enabled).toBe(true)

        expect(yield* catalogOf(beta)).toEqual(before)
      })
    )

    it.effect("the same ids live independently in each workspace: changes through one never touch the other", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const alpha = yield* populated(base, "alpha")
        const beta = yield* populated(base, "beta")
        const before = yield* catalogOf(beta)
        const owner = alpha.owner
        const api = owner.api

        // Reads of shared ids answer alpha's own rows.
        expect((yield* getAgent(owner, "shared-bot")).display_name).toBe("alpha shared bot")
        expect((yield* getPolicy(owner, "shared-policy")).description).toBe("alpha shared policy")
        expect((yield* api.labelPolicies.getLabelPolicy({ path: labelPath("shared_origin") })).policy.trust).toBe(
          "alpha"
        )
        expect((yield* api.toolMetadata.getToolMetadata({ path: toolPath("shared_tool") })).metadata.side_effect).toBe(
          "alpha"
        )

        // Writes to shared ids change alpha's rows only.
        yield* api.policies.setPoliciesEnabled({
          payload: { enabled: true, ids: alpha.generated.map((policy) => policy.id) }
        })
        yield* api.agents.replaceAgent({
          path: agentPath("shared-bot"),
          payload: yamlBytes(minimalAgentYaml("shared-bot", "alpha renamed"))
        })
        // The profile now derives nothing: alpha's generated policies go, beta's stay.
        yield* generate(owner, "shared-bot")
        yield* setEnabled(owner, "shared-policy", false)
        yield* api.labelPolicies.upsertLabelPolicy({ payload: { origin: "shared_origin", trust: "pwned" } })
        yield* api.toolMetadata.upsertToolMetadata({
          payload: { tool: "shared_tool", reversible: true, side_effect: "pwned" }
        })
        // Each answers 204 (the only success these routes declare).
        yield* api.agents.deleteAgent({ path: agentPath("shared-bot") })
        yield* api.policies.deletePolicy({ path: policyPath("shared-policy") })
        yield* api.toolMetadata.deleteToolMetadata({ path: toolPath("shared_tool") })
        // Creating beta's own ids in alpha is fine: ids are unique per workspace only.
        yield* createAgent(owner, minimalAgentYaml("beta-only-bot", "alpha's copy"))
        yield* createPolicy(owner, policyYaml("beta-only-policy", { description: "alpha's copy" }))

        expect(yield* catalogOf(beta)).toEqual(before)
      })
    )

    it.effect("lists never leak the other workspace's rows", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const alpha = yield* populated(base, "alpha")
        const beta = yield* populated(base, "beta")
        for (const [reader, other] of [
          [alpha, beta],
          [beta, alpha]
        ] as const) {
          const api = reader.owner.api
          for (const name of LISTS) {
            const { text } = yield* list(api, name)
            expect(text, name).not.toContain(other.name)
            expect(text, name).toContain(reader.name)
          }
          const guardrails = yield* withRaw(
            api.agents.listAgentGuardrails({ path: agentPath("shared-bot"), withResponse: true })
          )
          expect(guardrails.value.policies).toHaveLength(reader.generated.length)
          expect(guardrails.text).not.toContain(other.name)
          const sources = yield* api.knowledgeSources.listKnowledgeSources({ urlParams: {} })
          expect(sources.knowledge_sources.map((source) => source.id).sort()).toEqual(
            [reader.fileSourceId, reader.urlSourceId].sort()
          )
        }
      })
    )

    it.effect(
      "one user's second workspace (X-SERVICE-Workspace-Id) has a catalog of its own; a foreign one is 404",
      () =>
        Effect.gen(function* () {
          const base = yield* baseUrl
          const alpha = yield* populated(base, "alpha")
          const beta = yield* populated(base, "beta")
          const token = alpha.owner.jwt
          const second = yield* alpha.owner.api.team.createWorkspace({ payload: { name: "Second" } })
          const inSecond: Caller = { api: yield* clientAt(base, { token, workspace: second.id }) }

          for (const name of LISTS) {
            const { text } = yield* list(inSecond.api, name)
            expect(text, name).not.toContain("alpha")
          }
          yield* expectFailure(getAgent(inSecond, "shared-bot"), 404, "agent_not_found")
          yield* expectFailure(getPolicy(inSecond, "shared-policy"), 404, "policy_not_found")
          yield* expectFailure(
            inSecond.api.knowledgeSources.getKnowledgeSourceFile({ path: { id: alpha.fileSourceId } }),
            404
          )
          yield* createAgent(inSecond, minimalAgentYaml("shared-bot", "second"))
          yield* createPolicy(inSecond, policyYaml("shared-policy"))
          // The default workspace still answers its own rows.
          expect((yield* getAgent(alpha.owner, "shared-bot")).display_name).toBe("alpha shared bot")
          expect((yield* getPolicy(alpha.owner, "shared-policy")).description).toBe("alpha shared policy")

          // Naming a workspace the user is not a member of: 404 on every catalog route.
          const foreign = yield* clientAt(base, { token, workspace: beta.owner.workspaceId })
          const reads: ReadonlyArray<Attempt> = [
            ...LISTS.map((name): Attempt => [`GET /v1/${name}`, (api) => list(api, name)]),
            ["GET /v1/agents/shared-bot", (api) => api.agents.getAgent({ path: agentPath("shared-bot") })],
            ["GET /v1/policies/shared-policy", (api) => api.policies.getPolicy({ path: policyPath("shared-policy") })]
          ]
          for (const [route, read] of reads) {
            const error = yield* expectFailure(read(foreign), 404)
            expectErrorShape(error)
            expect(JSON.stringify(error), route).not.toContain("beta ")
          }
        })
    )
  })
})
