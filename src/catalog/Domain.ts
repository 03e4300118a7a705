/** Agents, policies, label policies, tool metadata and knowledge sources: the schemas of their contract. */
import { Schema } from "effect"
import { DecisionEffect, EventKind, Severity } from "../authorization/Domain.js"
import {
  boundedArray,
  BoundedJson,
  boundedString,
  Content,
  CursorParam,
  Description,
  Identifier,
  JsonValue,
  LimitParam,
  Limits,
  LongText,
  Name,
  nonEmptyBounded,
  NonEmptyIdentifier,
  NonEmptyName,
  Timestamp,
  Url
} from "../platform/Schemas.js"
import { MatchSpec, SimpleMatchType } from "./MatchSchemas.js"
import { PolicyTests } from "./PolicyTestSchemas.js"

/** The agent's own id (its `agent_id`, e.g. `support-bot`), chosen by the caller; it is the path `{id}`. */
export const AgentId = Identifier.pipe(Schema.brand("AgentId")).annotations({ identifier: "AgentId" })
export type AgentId = typeof AgentId.Type
export const PolicyId = Identifier.pipe(Schema.brand("PolicyId")).annotations({ identifier: "PolicyId" })
export type PolicyId = typeof PolicyId.Type
export const KnowledgeSourceId = Identifier.pipe(Schema.brand("KnowledgeSourceId")).annotations({
  identifier: "KnowledgeSourceId"
})
export type KnowledgeSourceId = typeof KnowledgeSourceId.Type

const Strings = Schema.Array(Schema.String)
/** A list of sentences in an authored document. */
const Sentences = boundedArray(Description, 200)
const StepNames = boundedArray(Identifier, 200)

// ---- agents

export const AgentKnowledgeSource = Schema.Struct({
  kb_id: Schema.String,
  description: Schema.String,
  url: Schema.String,
  kind: Schema.String.annotations({ description: "e.g. local" })
})

export const WorkflowRequirement = Schema.Struct({
  name: Schema.String,
  required_before: Strings,
  sensitive_steps: Strings
})

const AgentKnowledgeSourceInput = Schema.Struct({
  kb_id: Identifier,
  description: Description,
  url: Url,
  kind: Identifier.annotations({ description: "e.g. local" })
})

const WorkflowRequirementInput = Schema.Struct({
  name: Identifier,
  required_before: StepNames,
  sensitive_steps: StepNames
})

/** An agent profile as returned: every list present (possibly empty), absent texts as null. */
export class Agent extends Schema.Class<Agent>("Agent")({
  agent_id: AgentId,
  display_name: Schema.String,
  system_prompt: Schema.NullOr(Schema.String),
  target_url: Schema.NullOr(Schema.String),
  authority: Schema.Struct({ can_promise: Strings, cannot_promise: Strings }),
  scope: Schema.Struct({ in_scope: Strings, out_of_scope: Strings }),
  tone: Schema.Struct({ target: Schema.String, forbidden: Strings }),
  escalation_triggers: Strings,
  knowledge_sources: Schema.Array(AgentKnowledgeSource),
  workflow_definition: JsonValue,
  workflow_requirements: Schema.Array(WorkflowRequirement),
  canaries: Strings
}) {}

/**
 * A canary: a marker planted in the system prompt that must never appear in what the agent says
 * (the system_prompt_leak detector looks for it). 8 characters at least, so it cannot occur by chance.
 */
const Canary = Schema.String.pipe(
  Schema.minLength(8, { message: () => "must be at least 8 characters" }),
  Schema.maxLength(200, { message: () => "must be at most 200 characters" })
)

/**
 * The YAML/JSON document of `POST /v1/agents` (the HTTP payload is raw bytes; decode the parsed
 * text with this). The sample's fields are required, the rest optional.
 */
export const AgentProfileDocument = Schema.Struct({
  agent_id: Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/)),
  display_name: NonEmptyName,
  system_prompt: Schema.optional(LongText),
  target_url: Schema.optional(Url),
  authority: Schema.Struct({ can_promise: Schema.optional(Sentences), cannot_promise: Schema.optional(Sentences) }),
  scope: Schema.Struct({ in_scope: Schema.optional(Sentences), out_of_scope: Schema.optional(Sentences) }),
  tone: Schema.Struct({ target: Description, forbidden: Schema.optional(Sentences) }),
  escalation_triggers: Schema.optional(Sentences),
  knowledge_sources: Schema.optional(boundedArray(AgentKnowledgeSourceInput, 200)),
  workflow_definition: Schema.optional(BoundedJson),
  workflow_requirements: Schema.optional(boundedArray(WorkflowRequirementInput, 200)),
  canaries: Schema.optional(
    boundedArray(Canary, 50).annotations({
      description: "Up to 50 strings of 8-200 characters that must never appear in the agent's output"
    })
  )
}).annotations({ identifier: "AgentProfileDocument" })

// ---- policies

export const PolicyFamily = Schema.Literal("content", "tool", "flow", "approval", "memory")
/** The simple match types (what drafting and generation produce). */
export const MatchType = SimpleMatchType

export class PolicySummary extends Schema.Class<PolicySummary>("PolicySummary")({
  id: PolicyId,
  description: Schema.String,
  family: PolicyFamily,
  severity: Severity,
  action: DecisionEffect,
  enabled: Schema.Boolean,
  owner_agent_id: Schema.NullOr(Schema.String),
  invalid_reason: Schema.optionalWith(
    Schema.String.annotations({
      description:
        "Present when the stored document no longer compiles (e.g. a regex RE2 cannot run): why; the policy was disabled"
    }),
    { exact: true }
  )
}) {}

/** PolicySummary plus the authored document. */
export class PolicyDetail extends Schema.Class<PolicyDetail>("PolicyDetail")({
  ...PolicySummary.fields,
  source_yaml: Schema.String,
  version: Schema.Int.annotations({
    description: "1 on create; each replace (PUT) or rollback makes the next (GET /v1/policies/{id}/versions)"
  })
}) {}

/**
 * The policy document (core of the conventions; extra keys are tolerated). The HTTP payload is raw
 * bytes; decode the parsed YAML/JSON with this. `GET /v1/policies/schema` serves it as JSON Schema.
 * This is the structural shape only: the cross-field rules (rewrite required for action rewrite,
 * match.value per match.type, target syntax, regex safety, composite depth) live in
 * `catalog/PolicyLanguage.ts` and, for `match`, `catalog/PolicyMatchValidation.ts`.
 */
export const PolicyDocument = Schema.Struct({
  id: Schema.String.pipe(Schema.pattern(/^[a-z0-9][a-z0-9_.-]{0,127}$/)).annotations({
    description: "Unique id: 1-128 of a-z, 0-9, _ . -, starting with a letter or digit",
    message: () => "id must be 1-128 characters of a-z, 0-9, '_', '.' or '-', starting with a letter or digit",
    examples: ["no-refund-promise"]
  }),
  description: Description.annotations({ description: "What the policy is for, shown in findings" }),
  family: PolicyFamily.annotations({ description: "Which kind of check the policy belongs to" }),
  severity: Severity,
  action: DecisionEffect.annotations({
    description: "Effect when the policy matches; the strictest wins: deny > defer > rewrite > permit"
  }),
  enabled: Schema.optional(
    Schema.Boolean.annotations({ description: "Default true on create; generated policies start false" })
  ),
  owner_agent_id: Schema.optional(
    Identifier.annotations({ description: "When set, the policy applies to this agent only" })
  ),
  match: MatchSpec,
  rewrite: Schema.optional(
    LongText.annotations({ description: "Replacement text for each match; required when action is rewrite" })
  ),
  escalate: Schema.optional(
    Schema.Boolean.annotations({ description: "A matching defer asks for a human: the decision's status is escalated" })
  ),
  requires: Schema.optional(
    Identifier.annotations({ description: "Flow policies: the workflow step that must come first" })
  ),
  applies_to: Schema.optional(
    boundedArray(EventKind, 3).annotations({
      description: "The event kinds the policy screens; default [output.proposed] (docs/authorization.md)"
    })
  ),
  mode: Schema.optional(
    Schema.Literal("observe", "enforce").annotations({
      description: "enforce (default): a match sets the effect; observe: the finding is recorded, the effect left alone"
    })
  ),
  tests: Schema.optional(PolicyTests)
}).annotations({ identifier: "PolicyDocument", description: "A guardrail policy, authored as YAML or JSON" })
export type PolicyDocument = typeof PolicyDocument.Type

export const ValidationResult = Schema.Struct({
  valid: Schema.Boolean,
  policy_id: Schema.NullOr(Schema.String),
  errors: Schema.Array(Schema.Struct({ path: Schema.String, message: Schema.String }))
}).annotations({ identifier: "ValidationResult" })

export const DraftRequest = Schema.Struct({ prompt: nonEmptyBounded(Limits.text) })

/** A draft is a policy document `POST /v1/policies` takes as is (disabled), with the spec's flat match fields. */
export const PolicyDraft = Schema.Struct({
  id: Schema.String,
  description: Schema.String,
  family: PolicyFamily.annotations({ description: "Extension: the document's family" }),
  action: DecisionEffect,
  severity: Severity,
  enabled: Schema.Boolean.annotations({ description: "Extension: false; enable the policy once reviewed" }),
  match: Schema.Struct({
    type: MatchType,
    value: Schema.Union(Schema.String, Schema.Array(Schema.String)),
    target: Schema.String,
    case_sensitive: Schema.Boolean
  }).annotations({ description: "Extension: the document's match" }),
  match_type: MatchType,
  match_value: Schema.String,
  rewrite: Schema.String.annotations({ description: "The replacement text of a rewrite draft; empty otherwise" })
}).annotations({ identifier: "PolicyDraft" })

// ---- guard packs

export const PackName = Schema.String.pipe(Schema.pattern(/^[a-z0-9][a-z0-9-]{0,63}$/)).annotations({
  identifier: "PackName",
  description: "A guard pack's name, e.g. pii-basic",
  examples: ["pii-basic"]
})

export const GuardPack = Schema.Struct({
  name: PackName,
  description: Schema.String,
  policies: Schema.Array(
    Schema.Struct({
      id: PolicyId,
      description: Schema.String,
      action: DecisionEffect,
      severity: Severity,
      applies_to: Schema.Array(EventKind),
      mode: Schema.Literal("observe", "enforce")
    })
  )
}).annotations({ identifier: "GuardPack" })

export const InstallPack = Schema.Struct({
  enabled: Schema.optional(
    Schema.Boolean.annotations({ description: "Whether the installed policies start enabled; default false" })
  ),
  owner_agent_id: Schema.optional(
    // A blank owner makes documents that do not compile: enabled, they were disabled at their first use.
    Identifier.pipe(
      Schema.filter((id) => id.trim() !== "" || "must not be empty; omit it to apply to every agent")
    ).annotations({ description: "When set, the installed policies apply to this agent only" })
  )
}).annotations({ identifier: "InstallPack" })

export const InstalledPack = Schema.Struct({
  pack: PackName,
  installed: Schema.Array(PolicySummary),
  skipped: Schema.Array(
    Schema.Struct({ id: PolicyId, reason: Schema.String }).annotations({
      description: "A policy of the pack that was not installed: a policy with its id already exists"
    })
  )
}).annotations({ identifier: "InstalledPack" })

export const SetEnabled = Schema.Struct({ enabled: Schema.Boolean })
export const SetManyEnabled = Schema.Struct({
  enabled: Schema.Boolean,
  ids: boundedArray(Identifier, 1000)
})

// ---- label policies

/** Source origins are snake_case (e.g. `user`, `web_page`). */
export const Origin = Identifier.pipe(Schema.pattern(/^[a-z][a-z0-9_]*$/)).annotations({
  identifier: "Origin",
  description: "snake_case source origin, e.g. user"
})

export const LabelPolicy = Schema.Struct({
  enabled: Schema.Boolean,
  policy: Schema.Struct({ origin: Origin, confidentiality: JsonValue, integrity: JsonValue, trust: JsonValue })
}).annotations({ identifier: "LabelPolicy" })

/** Upsert body: the policy fields flat, plus `enabled` (default true). */
export const UpsertLabelPolicy = Schema.Struct({
  origin: Origin,
  confidentiality: Schema.optional(BoundedJson),
  integrity: Schema.optional(BoundedJson),
  trust: Schema.optional(BoundedJson),
  enabled: Schema.optional(Schema.Boolean)
})

// ---- tool metadata

export const ToolParam = Schema.Struct({
  path: Identifier,
  role: Identifier.annotations({ description: "e.g. authority_bearing" }),
  limit: Schema.optional(BoundedJson),
  allowed_sources: Schema.optional(
    boundedArray(Schema.Struct({ kind: Identifier, origin: Origin, source_id: Identifier }), 200)
  )
})

export const ToolMetadata = Schema.Struct({
  tool: NonEmptyIdentifier,
  reversible: Schema.Boolean,
  side_effect: Identifier.annotations({ description: "e.g. none" }),
  sandbox_hint: Schema.optional(BoundedJson),
  approval: Schema.optional(BoundedJson),
  params: Schema.optional(boundedArray(ToolParam, 200)),
  result_origin: Schema.optional(
    Origin.annotations({
      description: "origin of this tool's results for provenance inference (e.g. email, web); default tool_output"
    })
  )
}).annotations({ identifier: "ToolMetadata" })

export const ToolMetadataEntry = Schema.Struct({ enabled: Schema.Boolean, metadata: ToolMetadata }).annotations({
  identifier: "ToolMetadataEntry"
})

/** Upsert body: the metadata shape flat, plus `enabled` (default true). */
export const UpsertToolMetadata = Schema.Struct({ ...ToolMetadata.fields, enabled: Schema.optional(Schema.Boolean) })

// ---- knowledge sources

export class KnowledgeSource extends Schema.Class<KnowledgeSource>("KnowledgeSource")({
  id: KnowledgeSourceId,
  kind: Schema.String.annotations({ description: "e.g. url or file" }),
  title: Schema.String,
  location: Schema.NullOr(Schema.String),
  status: Schema.String.annotations({ description: "e.g. draft" }),
  metadata: JsonValue,
  created_at: Timestamp,
  updated_at: Timestamp,
  last_indexed_at: Schema.NullOr(Timestamp)
}) {}

/** BoundedJson, and at most `Limits.knowledgeMetadataBytes` of it as JSON. */
const KnowledgeMetadata = BoundedJson.pipe(
  Schema.filter(
    (value) =>
      Buffer.byteLength(JSON.stringify(value) ?? "", "utf8") <= Limits.knowledgeMetadataBytes ||
      `must be at most ${Limits.knowledgeMetadataBytes.toLocaleString("en-US")} bytes of JSON`
  )
)

/** A file source carries its content inline as base64 with the file payload's field names. */
export const CreateKnowledgeSource = Schema.Struct({
  kind: Schema.Literal("url", "file", "text"),
  /** The content of a `text` source. */
  text: Schema.optional(Content),
  title: NonEmptyName,
  location: Schema.optional(
    Url.annotations({
      description:
        "url sources: optional (a draft without it); an https URL the outbound guard allows (docs/outbound.md)"
    })
  ),
  metadata: Schema.optional(KnowledgeMetadata),
  file_name: Schema.optional(Name),
  media_type: Schema.optional(Identifier),
  /** A file is at most 10 MiB decoded: base64 of that, with room for line breaks. */
  data_base64: Schema.optional(boundedString(14 * 1024 * 1024))
})

/** The most sources one page of `GET /v1/knowledge-sources` holds (`limit` above it is clamped). */
export const KNOWLEDGE_PAGE_CAP = 200

/** Query of `GET /v1/knowledge-sources`: a page of `limit` (default 50, at most 200) after `cursor`. */
export const KnowledgeSourcesPageParams = Schema.Struct({
  limit: Schema.optional(LimitParam()),
  cursor: Schema.optional(CursorParam)
})
export type KnowledgeSourcesPageQuery = typeof KnowledgeSourcesPageParams.Type

export const KnowledgeSourcesPage = Schema.Struct({
  knowledge_sources: Schema.Array(KnowledgeSource),
  next_cursor: Schema.optional(
    Schema.String.annotations({ description: "Present when older sources follow: pass it as cursor" })
  )
}).annotations({ identifier: "KnowledgeSourcesPage" })

export const KnowledgeSourceFile = Schema.Struct({
  file_name: Schema.String,
  media_type: Schema.String,
  byte_size: Schema.Int,
  data_base64: Schema.String
}).annotations({ identifier: "KnowledgeSourceFile" })
