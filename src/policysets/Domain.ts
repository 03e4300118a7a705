/** Policy sets (docs/policies.md, "Policy-set digest"): the schemas of what a digest names and of its endpoint. */
import { Schema } from "effect"
import { AgentVersion, LabelPolicyVersion, PolicyVersion, ToolMetadataVersion } from "../catalog/Lifecycle.js"
import { CheckerMode } from "../identity/Domain.js"
import { JsonValue, Timestamp } from "../platform/Schemas.js"

/** A sha-256, as 64 lowercase hex digits. */
export const PolicySetDigest = Schema.String.pipe(Schema.pattern(/^[0-9a-f]{64}$/)).annotations({
  identifier: "PolicySetDigest",
  description: "The sha-256 (64 lowercase hex digits) of a policy set's canonical JSON",
  message: () => "must be 64 lowercase hex digits (a policy_set_digest)"
})

const DefaultAction = Schema.Literal("permit", "deny", "defer")

const CheckerModes = Schema.Struct({
  content: CheckerMode,
  profile: CheckerMode,
  param: CheckerMode,
  flow: CheckerMode,
  approval: CheckerMode,
  memory: CheckerMode
})

/**
 * What decided, as hashed and stored: the versions (not the documents, which their histories keep),
 * the checker modes in force and the default action that applied. Keys are hashed sorted
 * (canonical JSON), lists sorted by their key.
 */
export const PolicySetContent = Schema.Struct({
  detectors_version: Schema.String,
  default_action: DefaultAction,
  checker_modes: CheckerModes,
  /** The enabled policies that applied to the event's agent (unowned, or owned by it). */
  policies: Schema.Array(
    Schema.Struct({
      id: Schema.String,
      /** Null for a dry run's candidate document, which is named by its text's sha-256 instead. */
      version: Schema.NullOr(Schema.Int),
      candidate_sha256: Schema.optional(Schema.String)
    })
  ),
  /** The event's agent profile; null when the agent has none. */
  agent: Schema.NullOr(Schema.Struct({ agent_id: Schema.String, version: Schema.Int })),
  tool_metadata: Schema.Array(Schema.Struct({ tool: Schema.String, version: Schema.Int })),
  label_policies: Schema.Array(Schema.Struct({ origin: Schema.String, version: Schema.Int }))
}).annotations({ identifier: "PolicySetContent" })
export type PolicySetContent = typeof PolicySetContent.Type

/** `GET /v1/policy-sets/{digest}`: the set with each version's content, so a receipt can be explained later. */
export const PolicySet = Schema.Struct({
  digest: PolicySetDigest,
  created_at: Timestamp.annotations({ description: "When a decision first named this set" }),
  detectors_version: Schema.String.annotations({ description: "The version of the built-in detectors" }),
  default_action: DefaultAction.annotations({ description: "The default action that applied" }),
  checker_modes: CheckerModes.annotations({ description: "The checker modes in force" }),
  policies: Schema.Array(
    Schema.Struct({ id: Schema.String, ...PolicyVersion.fields, document: JsonValue }).annotations({
      identifier: "PolicySetPolicy"
    })
  ),
  agent: Schema.NullOr(
    Schema.Struct({ agent_id: Schema.String, ...AgentVersion.fields }).annotations({ identifier: "PolicySetAgent" })
  ),
  tool_metadata: Schema.Array(
    Schema.Struct({ tool: Schema.String, ...ToolMetadataVersion.fields }).annotations({ identifier: "PolicySetTool" })
  ),
  label_policies: Schema.Array(
    Schema.Struct({ origin: Schema.String, ...LabelPolicyVersion.fields }).annotations({
      identifier: "PolicySetLabelPolicy"
    })
  )
}).annotations({ identifier: "PolicySet" })
export type PolicySet = typeof PolicySet.Type
