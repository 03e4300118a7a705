/** Handlers of the catalog groups: agents, policies, label policies, tool metadata, knowledge sources. */
import { HttpApiBuilder } from "@effect/platform"
import { Effect, Layer } from "effect"
import { GuardrailApi } from "../Api.js"
import { inWorkspace } from "../identity/Authentication.js"
import { Agents } from "./Agents.js"
import { ConfigChangeListenerLive, ConfigChanges } from "./ConfigChanges.js"
import { Packs } from "./Packs.js"
import { Policies } from "./Policies.js"
import { policyJsonSchema } from "./PolicyLanguage.js"
import { Registry } from "./Registry.js"
import { CatalogRepo } from "./Repo.js"
import { CatalogSnapshot } from "./Snapshot.js"

export const AgentsHttpLive = HttpApiBuilder.group(GuardrailApi, "agents", (handlers) =>
  Effect.gen(function* () {
    const agents = yield* Agents
    return handlers
      .handle("listAgents", () => inWorkspace(agents.list).pipe(Effect.map((list) => ({ agents: list }))))
      .handle("createAgent", ({ payload }) => inWorkspace((ws) => agents.create(ws, payload)))
      .handle("getAgent", ({ path }) => inWorkspace((ws) => agents.find(ws, path.id)))
      .handle("replaceAgent", ({ path, payload }) => inWorkspace((ws) => agents.replace(ws, path.id, payload)))
      .handle("deleteAgent", ({ path }) => inWorkspace((ws) => agents.remove(ws, path.id)))
      .handle("listAgentGuardrails", ({ path }) =>
        inWorkspace((ws) => agents.guardrails(ws, path.id)).pipe(Effect.map((policies) => ({ policies })))
      )
      .handle("generateAgentGuardrails", ({ path }) =>
        inWorkspace((ws) => agents.generate(ws, path.id)).pipe(Effect.map((generated) => ({ generated })))
      )
  })
)

export const PoliciesHttpLive = HttpApiBuilder.group(GuardrailApi, "policies", (handlers) =>
  Effect.gen(function* () {
    const policies = yield* Policies
    const packs = yield* Packs
    return handlers
      .handle("listPolicies", () => inWorkspace(policies.list).pipe(Effect.map((list) => ({ policies: list }))))
      .handle("createPolicy", ({ payload }) => inWorkspace((ws) => policies.create(ws, payload)))
      .handle("validatePolicy", ({ payload }) => Effect.succeed(policies.validate(payload)))
      .handle("draftPolicy", ({ payload }) => policies.draft(payload.prompt))
      .handle("getPolicySchema", () => Effect.succeed(policyJsonSchema))
      .handle("listPolicyPacks", () => Effect.succeed({ packs: packs.list() }))
      .handle("installPolicyPack", ({ path, payload }) => inWorkspace((ws) => packs.install(ws, path.name, payload)))
      .handle("getPolicy", ({ path }) => inWorkspace((ws) => policies.detail(ws, path.id)))
      .handle("deletePolicy", ({ path }) => inWorkspace((ws) => policies.remove(ws, path.id)))
      .handle("setPolicyEnabled", ({ path, payload }) =>
        inWorkspace((ws) =>
          Effect.zipRight(policies.setEnabled(ws, [path.id], payload.enabled), policies.detail(ws, path.id))
        )
      )
      .handle("setPoliciesEnabled", ({ payload }) =>
        inWorkspace((ws) => policies.setEnabled(ws, payload.ids, payload.enabled)).pipe(
          Effect.map((list) => ({ policies: list }))
        )
      )
  })
)

export const LabelPoliciesHttpLive = HttpApiBuilder.group(GuardrailApi, "labelPolicies", (handlers) =>
  Effect.gen(function* () {
    const registry = yield* Registry
    return handlers
      .handle("listLabelPolicies", () =>
        inWorkspace(registry.listLabelPolicies).pipe(Effect.map((policies) => ({ policies })))
      )
      .handle("upsertLabelPolicy", ({ payload }) => inWorkspace((ws) => registry.upsertLabelPolicy(ws, payload)))
      .handle("getLabelPolicy", ({ path }) => inWorkspace((ws) => registry.labelPolicy(ws, path.origin)))
      .handle("deleteLabelPolicy", ({ path }) => inWorkspace((ws) => registry.deleteLabelPolicy(ws, path.origin)))
  })
)

export const ToolMetadataHttpLive = HttpApiBuilder.group(GuardrailApi, "toolMetadata", (handlers) =>
  Effect.gen(function* () {
    const registry = yield* Registry
    return handlers
      .handle("listToolMetadata", () => inWorkspace(registry.listToolMetadata).pipe(Effect.map((tools) => ({ tools }))))
      .handle("upsertToolMetadata", ({ payload }) => inWorkspace((ws) => registry.upsertToolMetadata(ws, payload)))
      .handle("getToolMetadata", ({ path }) => inWorkspace((ws) => registry.toolMetadata(ws, path.tool)))
      .handle("deleteToolMetadata", ({ path }) => inWorkspace((ws) => registry.deleteToolMetadata(ws, path.tool)))
  })
)

export const KnowledgeSourcesHttpLive = HttpApiBuilder.group(GuardrailApi, "knowledgeSources", (handlers) =>
  Effect.gen(function* () {
    const registry = yield* Registry
    return handlers
      .handle("listKnowledgeSources", () =>
        inWorkspace(registry.listKnowledgeSources).pipe(Effect.map((knowledge_sources) => ({ knowledge_sources })))
      )
      .handle("createKnowledgeSource", ({ payload }) =>
        inWorkspace((ws) => registry.createKnowledgeSource(ws, payload))
      )
      .handle("getKnowledgeSourceFile", ({ path }) => inWorkspace((ws) => registry.knowledgeSourceFile(ws, path.id)))
  })
)

/** The catalog services, with the listener that keeps this process's snapshot current. */
export const CatalogLive = Layer.mergeAll(
  Agents.Default,
  Policies.Default,
  Packs.Default,
  Registry.Default,
  ConfigChangeListenerLive
).pipe(
  Layer.provideMerge(ConfigChanges.Default),
  Layer.provideMerge(CatalogSnapshot.Default),
  Layer.provideMerge(CatalogRepo.Default)
)
