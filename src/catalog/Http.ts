/** Stub handlers of the catalog groups; each answers 501 until implemented. */
import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { GuardrailApi } from "../Api.js"
import { notImplemented } from "../platform/Errors.js"

const stub = (what: string) => () => Effect.fail(notImplemented(what))

export const AgentsHttpLive = HttpApiBuilder.group(GuardrailApi, "agents", (handlers) =>
  handlers
    .handle("listAgents", stub("GET /v1/agents"))
    .handle("createAgent", stub("POST /v1/agents"))
    .handle("getAgent", stub("GET /v1/agents/{id}"))
    .handle("deleteAgent", stub("DELETE /v1/agents/{id}"))
    .handle("listAgentGuardrails", stub("GET /v1/agents/{id}/guardrails"))
    .handle("generateAgentGuardrails", stub("POST /v1/agents/{id}/guardrails/generate"))
)

export const PoliciesHttpLive = HttpApiBuilder.group(GuardrailApi, "policies", (handlers) =>
  handlers
    .handle("listPolicies", stub("GET /v1/policies"))
    .handle("createPolicy", stub("POST /v1/policies"))
    .handle("validatePolicy", stub("POST /v1/policies/validate"))
    .handle("draftPolicy", stub("POST /v1/policies/draft"))
    .handle("getPolicySchema", stub("GET /v1/policies/schema"))
    .handle("getPolicy", stub("GET /v1/policies/{id}"))
    .handle("deletePolicy", stub("DELETE /v1/policies/{id}"))
    .handle("setPolicyEnabled", stub("PATCH /v1/policies/{id}/enabled"))
    .handle("setPoliciesEnabled", stub("PATCH /v1/policies/batch/enabled"))
)

export const LabelPoliciesHttpLive = HttpApiBuilder.group(GuardrailApi, "labelPolicies", (handlers) =>
  handlers
    .handle("listLabelPolicies", stub("GET /v1/label-policies"))
    .handle("upsertLabelPolicy", stub("POST /v1/label-policies"))
    .handle("getLabelPolicy", stub("GET /v1/label-policies/{origin}"))
    .handle("deleteLabelPolicy", stub("DELETE /v1/label-policies/{origin}"))
)

export const ToolMetadataHttpLive = HttpApiBuilder.group(GuardrailApi, "toolMetadata", (handlers) =>
  handlers
    .handle("listToolMetadata", stub("GET /v1/tool-metadata"))
    .handle("upsertToolMetadata", stub("POST /v1/tool-metadata"))
    .handle("getToolMetadata", stub("GET /v1/tool-metadata/{tool}"))
    .handle("deleteToolMetadata", stub("DELETE /v1/tool-metadata/{tool}"))
)

export const KnowledgeSourcesHttpLive = HttpApiBuilder.group(GuardrailApi, "knowledgeSources", (handlers) =>
  handlers
    .handle("listKnowledgeSources", stub("GET /v1/knowledge-sources"))
    .handle("createKnowledgeSource", stub("POST /v1/knowledge-sources"))
    .handle("getKnowledgeSourceFile", stub("GET /v1/knowledge-sources/{id}/file"))
)
