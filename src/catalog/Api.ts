/** The catalog contract: agents, policies, label policies, tool metadata and knowledge sources. */
import { Authentication } from "../identity/Authentication.js"
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as OpenApi from "@effect/platform/OpenApi"
import { Schema } from "effect"
import { MaxBodyBytes } from "../http/Routes.js"
import { Identifier, Limits } from "../platform/Schemas.js"
import {
  Agent,
  AgentId,
  CreateKnowledgeSource,
  DraftRequest,
  GuardPack,
  InstalledPack,
  InstallPack,
  KnowledgeSource,
  KnowledgeSourceFile,
  KnowledgeSourceId,
  KnowledgeSourcesPage,
  KnowledgeSourcesPageParams,
  LabelPolicy,
  Origin,
  PackName,
  PolicyDetail,
  PolicyDraft,
  PolicyId,
  PolicySummary,
  SetEnabled,
  SetManyEnabled,
  ToolMetadataEntry,
  UpsertLabelPolicy,
  UpsertToolMetadata,
  ValidationResult
} from "./Domain.js"
import {
  AgentVersions,
  LabelPolicyVersions,
  PolicyVersions,
  Rollback,
  ToolMetadataVersions,
  VersionsPageParams
} from "./Lifecycle.js"
import { PolicyTestReport, RunPolicyTests } from "./PolicyTestSchemas.js"

/** YAML (or JSON) text arrives as raw bytes; the handler parses and validates it. */
const YamlBody = HttpApiSchema.Uint8Array({ contentType: "application/yaml" })
/** YAML parsing is costly: documents have their own, smaller body limit (docs/limits.md). */
const yamlBodyLimit = [MaxBodyBytes, Limits.yaml.bytes] as const

const AgentPath = Schema.Struct({ id: AgentId })
const PolicyPath = Schema.Struct({ id: PolicyId })
const PackPath = Schema.Struct({ name: PackName })

export class AgentsApi extends HttpApiGroup.make("agents")
  .add(HttpApiEndpoint.get("listAgents", "/agents").addSuccess(Schema.Struct({ agents: Schema.Array(Agent) })))
  .add(
    HttpApiEndpoint.post("createAgent", "/agents")
      .setPayload(YamlBody)
      .addSuccess(Agent, { status: 201 })
      .annotate(...yamlBodyLimit)
  )
  .add(HttpApiEndpoint.get("getAgent", "/agents/:id").setPath(AgentPath).addSuccess(Agent))
  .add(
    HttpApiEndpoint.put("replaceAgent", "/agents/:id")
      .setPath(AgentPath)
      .setPayload(YamlBody)
      .annotate(...yamlBodyLimit)
      .addSuccess(Agent)
      .annotate(
        OpenApi.Description,
        "Extension: replace an agent's profile (POST answers 409 for an existing agent_id). The document's agent_id must equal the path's."
      )
  )
  .add(
    HttpApiEndpoint.get("listAgentVersions", "/agents/:id/versions")
      .setPath(AgentPath)
      .setUrlParams(VersionsPageParams)
      .addSuccess(AgentVersions)
      .annotate(
        OpenApi.Description,
        "Extension: the versions of an agent's profile (each create or replace makes one), newest first, paged (limit default 50, at most 100; next_cursor); still answers after a delete."
      )
  )
  .add(HttpApiEndpoint.del("deleteAgent", "/agents/:id").setPath(AgentPath).addSuccess(HttpApiSchema.NoContent))
  .add(
    HttpApiEndpoint.get("listAgentGuardrails", "/agents/:id/guardrails")
      .setPath(AgentPath)
      .addSuccess(Schema.Struct({ policies: Schema.Array(PolicySummary) }))
  )
  // Creates policies (disabled), hence 201.
  .add(
    HttpApiEndpoint.post("generateAgentGuardrails", "/agents/:id/guardrails/generate")
      .setPath(AgentPath)
      .addSuccess(Schema.Struct({ generated: Schema.Array(PolicyDetail) }), { status: 201 })
  )
  .prefix("/v1")
  .middleware(Authentication)
  .annotate(
    OpenApi.Description,
    "Agent profiles (YAML or JSON documents) and the guardrail policies owned by or generated for an agent."
  ) {}

export class PoliciesApi extends HttpApiGroup.make("policies")
  .add(
    HttpApiEndpoint.get("listPolicies", "/policies").addSuccess(
      Schema.Struct({ policies: Schema.Array(PolicySummary) })
    )
  )
  .add(
    HttpApiEndpoint.post("createPolicy", "/policies")
      .setPayload(YamlBody)
      .addSuccess(PolicyDetail, { status: 201 })
      .annotate(...yamlBodyLimit)
  )
  .add(
    HttpApiEndpoint.post("validatePolicy", "/policies/validate")
      .setPayload(YamlBody)
      .addSuccess(ValidationResult)
      .annotate(...yamlBodyLimit)
  )
  .add(
    HttpApiEndpoint.post("testPolicies", "/policies/test")
      .setPayload(RunPolicyTests)
      .addSuccess(PolicyTestReport)
      .annotate(
        OpenApi.Description,
        "Extension: run the tests of every enabled policy (or of ids) against the workspace's current policy set."
      )
  )
  .add(
    HttpApiEndpoint.post("draftPolicy", "/policies/draft")
      .setPayload(DraftRequest)
      .addSuccess(Schema.Struct({ draft: PolicyDraft }))
  )
  .add(
    HttpApiEndpoint.get("getPolicySchema", "/policies/schema").addSuccess(
      Schema.Unknown.annotations({ description: "JSON Schema of the policy document" })
    )
  )
  .add(
    HttpApiEndpoint.get("listPolicyPacks", "/policies/packs").addSuccess(
      Schema.Struct({ packs: Schema.Array(GuardPack) })
    )
  )
  // Creates policies, hence 201 (even when every one was already there: see `skipped`).
  .add(
    HttpApiEndpoint.post("installPolicyPack", "/policies/packs/:name/install")
      .setPath(PackPath)
      .setPayload(InstallPack)
      .addSuccess(InstalledPack, { status: 201 })
  )
  .add(HttpApiEndpoint.get("getPolicy", "/policies/:id").setPath(PolicyPath).addSuccess(PolicyDetail))
  .add(
    HttpApiEndpoint.put("replacePolicy", "/policies/:id")
      .setPath(PolicyPath)
      .setPayload(YamlBody)
      .annotate(...yamlBodyLimit)
      .addSuccess(PolicyDetail)
      .annotate(
        OpenApi.Description,
        "Extension: replace a policy's document as its next version. The document's id must equal the path's; enabled keeps its value unless the document gives it."
      )
  )
  .add(
    HttpApiEndpoint.get("listPolicyVersions", "/policies/:id/versions")
      .setPath(PolicyPath)
      .setUrlParams(VersionsPageParams)
      .addSuccess(PolicyVersions)
      .annotate(
        OpenApi.Description,
        "Extension: the versions of a policy, newest first, paged (limit default 50, at most 100; next_cursor); still answers after a delete."
      )
  )
  .add(
    HttpApiEndpoint.post("rollbackPolicy", "/policies/:id/rollback")
      .setPath(PolicyPath)
      .setPayload(Rollback)
      .addSuccess(PolicyDetail)
      .annotate(OpenApi.Description, "Extension: make an old version's document current again, as a new version.")
  )
  .add(HttpApiEndpoint.del("deletePolicy", "/policies/:id").setPath(PolicyPath).addSuccess(HttpApiSchema.NoContent))
  .add(
    HttpApiEndpoint.patch("setPolicyEnabled", "/policies/:id/enabled")
      .setPath(PolicyPath)
      .setPayload(SetEnabled)
      .addSuccess(PolicyDetail)
  )
  .add(
    HttpApiEndpoint.patch("setPoliciesEnabled", "/policies/batch/enabled")
      .setPayload(SetManyEnabled)
      .addSuccess(Schema.Struct({ policies: Schema.Array(PolicySummary) }))
  )
  .prefix("/v1")
  .middleware(Authentication)
  .annotate(
    OpenApi.Description,
    "Guardrail policies authored as YAML or JSON: validate, draft from a prompt, install guard packs, enable and disable."
  ) {}

const OriginPath = Schema.Struct({ origin: Origin })

export class LabelPoliciesApi extends HttpApiGroup.make("labelPolicies")
  .add(
    HttpApiEndpoint.get("listLabelPolicies", "/label-policies").addSuccess(
      Schema.Struct({ policies: Schema.Array(LabelPolicy) })
    )
  )
  // Upsert: 200 whether it created or replaced.
  .add(
    HttpApiEndpoint.post("upsertLabelPolicy", "/label-policies").setPayload(UpsertLabelPolicy).addSuccess(LabelPolicy)
  )
  .add(HttpApiEndpoint.get("getLabelPolicy", "/label-policies/:origin").setPath(OriginPath).addSuccess(LabelPolicy))
  .add(
    HttpApiEndpoint.get("listLabelPolicyVersions", "/label-policies/:origin/versions")
      .setPath(OriginPath)
      .setUrlParams(VersionsPageParams)
      .addSuccess(LabelPolicyVersions)
      .annotate(
        OpenApi.Description,
        "Extension: the versions of a label policy (each upsert makes one), newest first, paged (limit default 50, at most 100; next_cursor); still answers after a delete."
      )
  )
  .add(
    HttpApiEndpoint.del("deleteLabelPolicy", "/label-policies/:origin")
      .setPath(OriginPath)
      .addSuccess(HttpApiSchema.NoContent)
  )
  .prefix("/v1")
  .middleware(Authentication)
  .annotate(
    OpenApi.Description,
    "Per-origin label policies (confidentiality, integrity, trust) used by information-flow checks."
  ) {}

const ToolPath = Schema.Struct({ tool: Identifier })

export class ToolMetadataApi extends HttpApiGroup.make("toolMetadata")
  .add(
    HttpApiEndpoint.get("listToolMetadata", "/tool-metadata").addSuccess(
      Schema.Struct({ tools: Schema.Array(ToolMetadataEntry) })
    )
  )
  // Upsert: 200 whether it created or replaced.
  .add(
    HttpApiEndpoint.post("upsertToolMetadata", "/tool-metadata")
      .setPayload(UpsertToolMetadata)
      .addSuccess(ToolMetadataEntry)
  )
  .add(HttpApiEndpoint.get("getToolMetadata", "/tool-metadata/:tool").setPath(ToolPath).addSuccess(ToolMetadataEntry))
  .add(
    HttpApiEndpoint.get("listToolMetadataVersions", "/tool-metadata/:tool/versions")
      .setPath(ToolPath)
      .setUrlParams(VersionsPageParams)
      .addSuccess(ToolMetadataVersions)
      .annotate(
        OpenApi.Description,
        "Extension: the versions of a tool's metadata (each upsert makes one), newest first, paged (limit default 50, at most 100; next_cursor); still answers after a delete."
      )
  )
  .add(
    HttpApiEndpoint.del("deleteToolMetadata", "/tool-metadata/:tool")
      .setPath(ToolPath)
      .addSuccess(HttpApiSchema.NoContent)
  )
  .prefix("/v1")
  .middleware(Authentication)
  .annotate(
    OpenApi.Description,
    "The tool registry: side effects, reversibility, approval and the allowed sources of each parameter."
  ) {}

export class KnowledgeSourcesApi extends HttpApiGroup.make("knowledgeSources")
  .add(
    HttpApiEndpoint.get("listKnowledgeSources", "/knowledge-sources")
      .setUrlParams(KnowledgeSourcesPageParams)
      .addSuccess(KnowledgeSourcesPage)
  )
  .add(
    HttpApiEndpoint.post("createKnowledgeSource", "/knowledge-sources")
      .setPayload(CreateKnowledgeSource)
      .addSuccess(KnowledgeSource, { status: 201 })
      // A file may be 10 MiB decoded, about 13.4 MiB as base64 in JSON.
      .annotate(MaxBodyBytes, 14 * 1024 * 1024)
  )
  .add(
    HttpApiEndpoint.get("getKnowledgeSourceFile", "/knowledge-sources/:id/file")
      .setPath(Schema.Struct({ id: KnowledgeSourceId }))
      .addSuccess(KnowledgeSourceFile)
  )
  .add(
    HttpApiEndpoint.del("deleteKnowledgeSource", "/knowledge-sources/:id")
      .setPath(Schema.Struct({ id: KnowledgeSourceId }))
      .addSuccess(HttpApiSchema.NoContent)
      .annotate(
        OpenApi.Description,
        "Extension: deletes a source and its file (frees room under MAX_KNOWLEDGE_SOURCES_PER_WORKSPACE and MAX_KNOWLEDGE_BYTES_PER_WORKSPACE)."
      )
  )
  .prefix("/v1")
  .middleware(Authentication)
  .annotate(OpenApi.Description, "Knowledge sources an agent may cite; file sources carry their content as base64.") {}
