/**
 * Shared by the catalog isolation suites
 * (catalog-isolation-workspaces-http.test.ts,
 * catalog-isolation-access-http.test.ts): a tenant whose catalog holds items
 * under shared and own ids, a snapshot of everything it holds, and the
 * by-id routes to aim at another tenant's ids.
 */
import { Effect } from "effect"
import type { PolicyDetail } from "../../src/catalog/Domain.js"
import { type GuardrailClient, withRaw } from "../support/Api.js"
import { tenant } from "../support/Tenants.js"
import {
  agentPath,
  createAgent,
  createPolicy,
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

export const LISTS = ["agents", "policies", "label-policies", "tool-metadata", "knowledge-sources"] as const
export type List = (typeof LISTS)[number]

/** `GET /v1/<list>` with its answer as sent (the decoded value and the body text). */
export const list = (
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
      return withRaw(api.knowledgeSources.listKnowledgeSources({ urlParams: {}, withResponse: true }))
  }
}

export const labelPath = (origin: string) => ({ origin })
export const toolPath = (tool: string) => ({ tool })

/**
 * A tenant whose catalog holds items under ids shared with every other
 * tenant (`shared-*`) and under ids of its own (`<name>-only*`); every text
 * carries `name` so a leak is visible.
 */
export const populated = (base: string, name: string) =>
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

export type Populated = Effect.Effect.Success<ReturnType<typeof populated>>

/** Everything a tenant's catalog holds, read by its owner: used to show that nothing changed. */
export const catalogOf = (t: Populated) =>
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
export type Attempt = readonly [route: string, call: (api: GuardrailClient) => Effect.Effect<unknown, unknown>]

/** Every by-id route, aimed at `target`'s own ids. */
export const byIdAttempts = (target: Populated): ReadonlyArray<Attempt> => {
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
