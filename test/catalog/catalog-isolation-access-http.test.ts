/**
 * Access to the catalog over HTTP: a runtime key may read its workspace's
 * catalog but not write it (403 forbidden_credential, and nothing changes),
 * gets 404 for another workspace's ids, and without a credential every
 * catalog route is 401. Isolation between workspaces (sessions) is in
 * catalog-isolation-workspaces-http.test.ts.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { clientAt, expectFailure } from "../support/Api.js"
import { createKey, keyClient } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import { agentPath, expectErrorShape, minimalAgentYaml, policyPath, policyYaml } from "./catalog-helpers.js"
import { yamlBytes } from "../support/Events.js"
import {
  type Attempt,
  byIdAttempts,
  catalogOf,
  labelPath,
  list,
  LISTS,
  populated,
  type Populated,
  toolPath
} from "./catalog-isolation-support.js"

layer(testServer("database"), SERVER_OPTIONS)("catalog tenant isolation and access", (it) => {
  describe("access", () => {
    const writeAttempts = (t: Populated): ReadonlyArray<Attempt> => [
      ["POST /v1/agents", (api) => api.agents.createAgent({ payload: yamlBytes(minimalAgentYaml("key-made-bot")) })],
      [
        "PUT /v1/agents/shared-bot",
        (api) =>
          api.agents.replaceAgent({
            path: agentPath("shared-bot"),
            payload: yamlBytes(minimalAgentYaml("shared-bot", "key renamed"))
          })
      ],
      ["DELETE /v1/agents/shared-bot", (api) => api.agents.deleteAgent({ path: agentPath("shared-bot") })],
      [
        "POST /v1/agents/shared-bot/guardrails/generate",
        (api) => api.agents.generateAgentGuardrails({ path: agentPath("shared-bot") })
      ],
      ["POST /v1/policies", (api) => api.policies.createPolicy({ payload: yamlBytes(policyYaml("key-made-policy")) })],
      [
        "POST /v1/policies/validate",
        (api) => api.policies.validatePolicy({ payload: yamlBytes(policyYaml("key-checked-policy")) })
      ],
      ["POST /v1/policies/draft", (api) => api.policies.draftPolicy({ payload: { prompt: "never promise a refund" } })],
      ["DELETE /v1/policies/shared-policy", (api) => api.policies.deletePolicy({ path: policyPath("shared-policy") })],
      [
        "PATCH /v1/policies/shared-policy/enabled",
        (api) => api.policies.setPolicyEnabled({ path: policyPath("shared-policy"), payload: { enabled: false } })
      ],
      [
        "PATCH /v1/policies/batch/enabled",
        (api) => api.policies.setPoliciesEnabled({ payload: { enabled: false, ids: ["shared-policy"] } })
      ],
      ["POST /v1/label-policies", (api) => api.labelPolicies.upsertLabelPolicy({ payload: { origin: "key_origin" } })],
      [
        "DELETE /v1/label-policies/shared_origin",
        (api) => api.labelPolicies.deleteLabelPolicy({ path: labelPath("shared_origin") })
      ],
      [
        "POST /v1/tool-metadata",
        (api) =>
          api.toolMetadata.upsertToolMetadata({ payload: { tool: "key_tool", reversible: true, side_effect: "none" } })
      ],
      [
        "DELETE /v1/tool-metadata/shared_tool",
        (api) => api.toolMetadata.deleteToolMetadata({ path: toolPath("shared_tool") })
      ],
      [
        "POST /v1/knowledge-sources",
        (api) => api.knowledgeSources.createKnowledgeSource({ payload: { kind: "text", title: "key", text: "key" } })
      ],
      [
        `DELETE /v1/policies/${t.enabledGenerated}`,
        (api) => api.policies.deletePolicy({ path: policyPath(t.enabledGenerated) })
      ]
    ]

    it.effect("a runtime key reads every catalog list and item of its workspace", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const alpha = yield* populated(base, "alpha")
        const key = yield* keyClient(base, yield* createKey(alpha.owner))
        for (const name of LISTS) {
          const withKey = yield* list(key, name)
          const withSession = yield* list(alpha.owner.api, name)
          expect(withKey.value, name).toEqual(withSession.value)
        }
        yield* key.agents.getAgent({ path: agentPath("shared-bot") })
        yield* key.agents.listAgentGuardrails({ path: agentPath("shared-bot") })
        yield* key.policies.getPolicy({ path: policyPath("shared-policy") })
        yield* key.policies.getPolicySchema()
        yield* key.labelPolicies.getLabelPolicy({ path: labelPath("shared_origin") })
        yield* key.toolMetadata.getToolMetadata({ path: toolPath("shared_tool") })
        yield* key.knowledgeSources.getKnowledgeSourceFile({ path: { id: alpha.fileSourceId } })
      })
    )

    it.effect("a runtime key gets 403 forbidden_credential on every catalog write, and nothing changes", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const alpha = yield* populated(base, "alpha")
        const before = yield* catalogOf(alpha)
        const key = yield* keyClient(base, yield* createKey(alpha.owner))
        for (const [, write] of writeAttempts(alpha)) {
          expectErrorShape(yield* expectFailure(write(key), 403, "forbidden_credential"))
        }
        expect(yield* catalogOf(alpha)).toEqual(before)
      })
    )

    it.effect("a runtime key of one workspace gets 404 for the other workspace's ids", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const alpha = yield* populated(base, "alpha")
        const beta = yield* populated(base, "beta")
        const key = yield* keyClient(base, yield* createKey(alpha.owner))
        for (const [, read] of byIdAttempts(beta).filter(([route]) => route.startsWith("GET "))) {
          expectErrorShape(yield* expectFailure(read(key), 404))
        }
        for (const name of LISTS) {
          const { text } = yield* list(key, name)
          expect(text, name).not.toContain("beta")
        }
      })
    )

    it.effect("without a credential every catalog route is 401", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const alpha = yield* populated(base, "alpha")
        const before = yield* catalogOf(alpha)
        const anonymous = yield* clientAt(base)
        const attempts: ReadonlyArray<Attempt> = [
          ...LISTS.map((name): Attempt => [`GET /v1/${name}`, (api) => list(api, name)]),
          ...writeAttempts(alpha),
          ["GET /v1/agents/shared-bot", (api) => api.agents.getAgent({ path: agentPath("shared-bot") })]
        ]
        for (const [, attempt] of attempts) expectErrorShape(yield* expectFailure(attempt(anonymous), 401))
        expect(yield* catalogOf(alpha)).toEqual(before)
      })
    )
  })
})
