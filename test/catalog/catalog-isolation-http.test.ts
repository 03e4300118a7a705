/**
 * Tenant isolation and access for the catalog over HTTP: two users, each
 * with a workspace holding agents, generated and authored policies, label
 * policies, tool metadata and knowledge sources, some under the same ids.
 * Every by-id route answers 404 with the other workspace's ids and changes
 * nothing there; lists never leak; the same ids live independently in each
 * workspace. A runtime key may read the catalog but not write it (403
 * forbidden_credential).
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import type { PolicyDetail } from "../../src/catalog/Domain.js"
import { type Caller, clientAt, expectFailure, type GuardrailClient, withRaw } from "../support/Api.js"
import { createKey, keyClient, tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import {
  agentPath,
  createAgent,
  createPolicy,
  expectErrorShape,
  fullAgentYaml,
  generate,
  getAgent,
  getPolicy,
  listPolicies,
  minimalAgentYaml,
  policyPath,
  policyYaml,
  setEnabled
} from "./catalog-helpers.js"
import { yamlBytes } from "../support/Events.js"

const LISTS = ["agents", "policies", "label-policies", "tool-metadata", "knowledge-sources"] as const
type List = (typeof LISTS)[number]

/** `GET /v1/<list>` with its answer as sent (the decoded value and the body text). */
const list = (
  api: GuardrailClient,
  name: List
): Effect.Effect<{ readonly value: unknown; readonly text: string }, unknown> => {
  switch (name) {
    case "agents":
      return withRaw(api.agents.listAgents({ withResponse: true }))
    case "policies":
      return withRaw(api.policies.listPolicies({ withResponse: true }))
    case "label-policies":
      return withRaw(api.labelPolicies.listLabelPolicies({ withResponse: true }))
    case "tool-metadata":
      return withRaw(api.toolMetadata.listToolMetadata({ withResponse: true }))
    case "knowledge-sources":
      return withRaw(api.knowledgeSources.listKnowledgeSources({ withResponse: true }))
  }
}

const labelPath = (origin: string) => ({ origin })
const toolPath = (tool: string) => ({ tool })

/**
 * A tenant whose catalog holds items under ids shared with every other
 * tenant (`shared-*`) and under ids of its own (`<name>-only*`); every text
 * carries `name` so a leak is visible.
 */
const populated = (base: string, name: string) =>
  Effect.gen(function* () {
    const owner = yield* tenant(base)
    yield* createAgent(owner, fullAgentYaml("shared-bot", `${name} shared bot`))
    yield* createAgent(owner, minimalAgentYaml(`${name}-only-bot`, `${name} only bot`))
    const generated = yield* generate(owner, "shared-bot")
    const enabledGenerated = generated[0]!.id
    yield* setEnabled(owner, enabledGenerated, true)
    yield* createPolicy(owner, policyYaml("shared-policy", { description: `${name} shared policy` }))
    yield* createPolicy(owner, policyYaml(`${name}-only-policy`, { description: `${name} only policy` }))
    yield* createPolicy(owner, policyYaml(`${name}-off-policy`, { description: `${name} off policy`, enabled: false }))
    for (const origin of ["shared_origin", `${name}_only_origin`]) {
      yield* owner.api.labelPolicies.upsertLabelPolicy({ payload: { origin, trust: name, integrity: { name } } })
    }
    for (const tool of ["shared_tool", `${name}_only_tool`]) {
      yield* owner.api.toolMetadata.upsertToolMetadata({ payload: { tool, reversible: false, side_effect: name } })
    }
    const file = yield* owner.api.knowledgeSources.createKnowledgeSource({
      payload: {
        kind: "file",
        title: `${name} handbook`,
        file_name: `${name}.txt`,
        media_type: "text/plain",
        data_base64: Buffer.from(`${name} secret handbook`).toString("base64")
      }
    })
    const url = yield* owner.api.knowledgeSources.createKnowledgeSource({
      payload: { kind: "url", title: `${name} faq`, location: `https://${name}.example.com/faq` }
    })
    return { owner, name, generated, enabledGenerated, fileSourceId: file.id, urlSourceId: url.id }
  })

type Populated = Effect.Effect.Success<ReturnType<typeof populated>>

/** Everything a tenant's catalog holds, read by its owner: used to show that nothing changed. */
const catalogOf = (t: Populated) =>
  Effect.gen(function* () {
    const api = t.owner.api
    const lists: Record<string, unknown> = {}
    for (const name of LISTS) lists[name] = (yield* list(api, name)).value
    const policies = yield* listPolicies(t.owner)
    const details: Array<PolicyDetail> = []
    for (const policy of policies) details.push(yield* getPolicy(t.owner, policy.id))
    return {
      lists,
      details,
      agents: [yield* getAgent(t.owner, "shared-bot"), yield* getAgent(t.owner, `${t.name}-only-bot`)],
      guardrails: yield* api.agents.listAgentGuardrails({ path: agentPath("shared-bot") }),
      labels: [
        yield* api.labelPolicies.getLabelPolicy({ path: labelPath("shared_origin") }),
        yield* api.labelPolicies.getLabelPolicy({ path: labelPath(`${t.name}_only_origin`) })
      ],
      tools: [
        yield* api.toolMetadata.getToolMetadata({ path: toolPath("shared_tool") }),
        yield* api.toolMetadata.getToolMetadata({ path: toolPath(`${t.name}_only_tool`) })
      ],
      file: yield* api.knowledgeSources.getKnowledgeSourceFile({ path: { id: t.fileSourceId } })
    }
  })

/** A call to make as some caller, named by its method and route. */
type Attempt = readonly [route: string, call: (api: GuardrailClient) => Effect.Effect<unknown, unknown>]

/** Every by-id route, aimed at `target`'s own ids. */
const byIdAttempts = (target: Populated): ReadonlyArray<Attempt> => {
  const agent = `${target.name}-only-bot`
  const policy = `${target.name}-only-policy`
  const offPolicy = `${target.name}-off-policy`
  const origin = `${target.name}_only_origin`
  const tool = `${target.name}_only_tool`
  return [
    [`GET /v1/agents/${agent}`, (api) => api.agents.getAgent({ path: agentPath(agent) })],
    [
      `PUT /v1/agents/${agent}`,
      (api) => api.agents.replaceAgent({ path: agentPath(agent), payload: yamlBytes(minimalAgentYaml(agent, "pwned")) })
    ],
    [`DELETE /v1/agents/${agent}`, (api) => api.agents.deleteAgent({ path: agentPath(agent) })],
    [`GET /v1/agents/${agent}/guardrails`, (api) => api.agents.listAgentGuardrails({ path: agentPath(agent) })],
    [
      `POST /v1/agents/${agent}/guardrails/generate`,
      (api) => api.agents.generateAgentGuardrails({ path: agentPath(agent) })
    ],
    [`GET /v1/policies/${policy}`, (api) => api.policies.getPolicy({ path: policyPath(policy) })],
    [`DELETE /v1/policies/${policy}`, (api) => api.policies.deletePolicy({ path: policyPath(policy) })],
    [
      `PATCH /v1/policies/${policy}/enabled`,
      (api) => api.policies.setPolicyEnabled({ path: policyPath(policy), payload: { enabled: false } })
    ],
    [
      `PATCH /v1/policies/${offPolicy}/enabled`,
      (api) => api.policies.setPolicyEnabled({ path: policyPath(offPolicy), payload: { enabled: true } })
    ],
    [
      "PATCH /v1/policies/batch/enabled",
      (api) => api.policies.setPoliciesEnabled({ payload: { enabled: true, ids: [offPolicy] } })
    ],
    // Generated ids are the same in every workspace that has a shared-bot: paired with an id only the target has.
    [
      "PATCH /v1/policies/batch/enabled (with a generated id)",
      (api) => api.policies.setPoliciesEnabled({ payload: { enabled: false, ids: [policy, target.enabledGenerated] } })
    ],
    [`GET /v1/label-policies/${origin}`, (api) => api.labelPolicies.getLabelPolicy({ path: labelPath(origin) })],
    [`DELETE /v1/label-policies/${origin}`, (api) => api.labelPolicies.deleteLabelPolicy({ path: labelPath(origin) })],
    [`GET /v1/tool-metadata/${tool}`, (api) => api.toolMetadata.getToolMetadata({ path: toolPath(tool) })],
    [`DELETE /v1/tool-metadata/${tool}`, (api) => api.toolMetadata.deleteToolMetadata({ path: toolPath(tool) })],
    [
      `GET /v1/knowledge-sources/${target.fileSourceId}/file`,
      (api) => api.knowledgeSources.getKnowledgeSourceFile({ path: { id: target.fileSourceId } })
    ],
    [
      `GET /v1/knowledge-sources/${target.urlSourceId}/file`,
      (api) => api.knowledgeSources.getKnowledgeSourceFile({ path: { id: target.urlSourceId } })
    ]
  ]
}

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
        yield* api.agents.replaceAgent({
          path: agentPath("shared-bot"),
          payload: yamlBytes(minimalAgentYaml("shared-bot", "alpha renamed"))
        })
        yield* generate(owner, "shared-bot")
        yield* setEnabled(owner, "shared-policy", false)
        yield* api.policies.setPoliciesEnabled({
          payload: { enabled: true, ids: alpha.generated.map((policy) => policy.id) }
        })
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
          const sources = yield* api.knowledgeSources.listKnowledgeSources()
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
