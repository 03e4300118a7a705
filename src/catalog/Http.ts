/** Handlers of the catalog groups: agents, policies, label policies, tool metadata, knowledge sources. */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect, Layer } from "effect"
import { GuardrailApi } from "../Api.js"
import { CompileAllowance } from "./CompileAllowance.js"
import { type Caller, CurrentCaller, inWorkspace } from "../identity/Authentication.js"
import { Agents } from "./Agents.js"
import { ConfigChangeListenerLive, ConfigChanges } from "./ConfigChanges.js"
import { authorOf } from "./Lifecycle.js"
import { Packs } from "./Packs.js"
import { Policies } from "./Policies.js"
import { policyJsonSchema } from "./PolicyLanguage.js"
import { Registry } from "./Registry.js"
import { CatalogRepo } from "./Repo.js"
import { CatalogSnapshot } from "./Snapshot.js"

/** Runs `run` with the caller: writes that record who made them (versions). */
const asCaller = <A, E, R>(run: (caller: Caller) => Effect.Effect<A, E, R>) => Effect.flatMap(CurrentCaller, run)

export const AgentsHttpLive = HttpApiBuilder.group(GuardrailApi, "agents", (handlers) =>
  Effect.gen(function* () {
    const agents = yield* Agents
    return handlers
      .handle("listAgents", () => inWorkspace(agents.list).pipe(Effect.map((list) => ({ agents: list }))))
      .handle("createAgent", ({ payload }) =>
        asCaller((caller) => agents.create(caller.workspaceId, payload, authorOf(caller)))
      )
      .handle("getAgent", ({ path }) => inWorkspace((ws) => agents.find(ws, path.id)))
      .handle("replaceAgent", ({ path, payload }) =>
        asCaller((caller) => agents.replace(caller.workspaceId, path.id, payload, authorOf(caller)))
      )
      .handle("listAgentVersions", ({ path, urlParams }) =>
        inWorkspace((ws) => agents.versions(ws, path.id, urlParams))
      )
      .handle("deleteAgent", ({ path }) => inWorkspace((ws) => agents.remove(ws, path.id)))
      .handle("listAgentGuardrails", ({ path }) =>
        inWorkspace((ws) => agents.guardrails(ws, path.id)).pipe(Effect.map((policies) => ({ policies })))
      )
      .handle("generateAgentGuardrails", ({ path }) =>
        asCaller((caller) => agents.generate(caller.workspaceId, path.id, authorOf(caller))).pipe(
          Effect.map((generated) => ({ generated }))
        )
      )
  })
)

export const PoliciesHttpLive = HttpApiBuilder.group(GuardrailApi, "policies", (handlers) =>
  Effect.gen(function* () {
    const policies = yield* Policies
    const packs = yield* Packs
    return handlers
      .handle("listPolicies", () => inWorkspace(policies.list).pipe(Effect.map((list) => ({ policies: list }))))
      .handle("createPolicy", ({ payload }) =>
        asCaller((caller) => policies.create(caller.workspaceId, payload, authorOf(caller)))
      )
      .handle("replacePolicy", ({ path, payload }) =>
        asCaller((caller) => policies.replace(caller.workspaceId, path.id, payload, authorOf(caller)))
      )
      .handle("listPolicyVersions", ({ path, urlParams }) =>
        inWorkspace((ws) => policies.versions(ws, path.id, urlParams))
      )
      .handle("rollbackPolicy", ({ path, payload }) =>
        asCaller((caller) => policies.rollback(caller.workspaceId, path.id, payload.version, authorOf(caller)))
      )
      .handle("validatePolicy", ({ payload }) => inWorkspace((ws) => policies.validate(ws, payload)))
      .handle("testPolicies", ({ payload }) => inWorkspace((ws) => policies.runTests(ws, payload.ids)))
      .handle("draftPolicy", ({ payload }) => policies.draft(payload.prompt))
      .handle("getPolicySchema", () => Effect.succeed(policyJsonSchema))
      .handle("listPolicyPacks", () => Effect.succeed({ packs: packs.list() }))
      .handle("installPolicyPack", ({ path, payload }) =>
        asCaller((caller) => packs.install(caller.workspaceId, path.name, payload, authorOf(caller)))
      )
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
      .handle("upsertLabelPolicy", ({ payload }) =>
        asCaller((caller) => registry.upsertLabelPolicy(caller.workspaceId, payload, authorOf(caller)))
      )
      .handle("getLabelPolicy", ({ path }) => inWorkspace((ws) => registry.labelPolicy(ws, path.origin)))
      .handle("listLabelPolicyVersions", ({ path, urlParams }) =>
        inWorkspace((ws) => registry.labelPolicyVersions(ws, path.origin, urlParams))
      )
      .handle("deleteLabelPolicy", ({ path }) => inWorkspace((ws) => registry.deleteLabelPolicy(ws, path.origin)))
  })
)

export const ToolMetadataHttpLive = HttpApiBuilder.group(GuardrailApi, "toolMetadata", (handlers) =>
  Effect.gen(function* () {
    const registry = yield* Registry
    return handlers
      .handle("listToolMetadata", () => inWorkspace(registry.listToolMetadata).pipe(Effect.map((tools) => ({ tools }))))
      .handle("upsertToolMetadata", ({ payload }) =>
        asCaller((caller) => registry.upsertToolMetadata(caller.workspaceId, payload, authorOf(caller)))
      )
      .handle("getToolMetadata", ({ path }) => inWorkspace((ws) => registry.toolMetadata(ws, path.tool)))
      .handle("listToolMetadataVersions", ({ path, urlParams }) =>
        inWorkspace((ws) => registry.toolMetadataVersions(ws, path.tool, urlParams))
      )
      .handle("deleteToolMetadata", ({ path }) => inWorkspace((ws) => registry.deleteToolMetadata(ws, path.tool)))
  })
)

export const KnowledgeSourcesHttpLive = HttpApiBuilder.group(GuardrailApi, "knowledgeSources", (handlers) =>
  Effect.gen(function* () {
    const registry = yield* Registry
    return handlers
      .handle("listKnowledgeSources", ({ urlParams }) =>
        inWorkspace((ws) => registry.listKnowledgeSources(ws, urlParams))
      )
      .handle("createKnowledgeSource", ({ payload }) =>
        inWorkspace((ws) => registry.createKnowledgeSource(ws, payload))
      )
      .handle("getKnowledgeSourceFile", ({ path }) => inWorkspace((ws) => registry.knowledgeSourceFile(ws, path.id)))
      .handle("deleteKnowledgeSource", ({ path }) => inWorkspace((ws) => registry.deleteKnowledgeSource(ws, path.id)))
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
  // One allowance for every request that compiles (policies, dry runs, impact replays): layers are shared by reference.
  Layer.provideMerge(CompileAllowance.Default),
  Layer.provideMerge(CatalogSnapshot.Default),
  Layer.provideMerge(CatalogRepo.Default)
)
