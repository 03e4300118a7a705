/** Impact replay: the request, the job and its result (docs/policies.md, "Lifecycle"). */
import { Schema } from "effect"
import { DecisionEffect } from "../authorization/Domain.js"
import { MAX_CANDIDATE_POLICIES } from "../authorization/DryRun.js"
import { boundedArray, Identifier, InstantParam, Limits, nonEmptyBounded, Timestamp } from "../platform/Schemas.js"

export const ImpactJobId = Identifier.pipe(Schema.brand("ImpactJobId")).annotations({ identifier: "ImpactJobId" })
export type ImpactJobId = typeof ImpactJobId.Type

/** At most this many example trace ids per transition (and landed attacks listed). */
export const MAX_EXAMPLES = 50

export const ImpactRequest = Schema.Struct({
  candidate_policies: Schema.optional(
    boundedArray(nonEmptyBounded(Limits.longText), MAX_CANDIDATE_POLICIES).annotations({
      description: "Policy documents (YAML or JSON text) replayed as enabled, each replacing a live policy with its id"
    })
  ),
  enable_ids: Schema.optional(
    boundedArray(Identifier, 1000).annotations({ description: "Stored policies replayed as enabled" })
  ),
  disable_ids: Schema.optional(
    boundedArray(Identifier, 1000).annotations({ description: "Live policies left out of the replay" })
  ),
  start: InstantParam.annotations({ description: "Replays decisions made at or after this instant" }),
  end: InstantParam.annotations({ description: "...and before this one" }),
  agent_id: Schema.optional(Identifier)
}).annotations({ identifier: "ImpactRequest" })
export type ImpactRequest = typeof ImpactRequest.Type

/** A stored policy named in `enable_ids`, as it was when the job was asked for. */
export const EnabledDocument = Schema.Struct({ id: Schema.String, version: Schema.Int, document: Schema.Unknown })

/** What a job keeps of its request: the request itself and the documents of `enable_ids`. */
export const StoredRequest = Schema.Struct({
  ...ImpactRequest.fields,
  enabled_documents: Schema.Array(EnabledDocument)
})
export type StoredRequest = typeof StoredRequest.Type

export const Transition = Schema.Struct({
  from: DecisionEffect,
  to: DecisionEffect,
  count: Schema.Int,
  example_trace_ids: Schema.Array(Schema.String)
})

export const ImpactResult = Schema.Struct({
  decisions_replayed: Schema.Int,
  skipped: Schema.Int.annotations({
    description: "Decisions in the window whose input was kept as metadata only (not replayable)"
  }),
  changed: Schema.Int.annotations({ description: "Replayed decisions whose effect the candidate set changes" }),
  recorded_mismatches: Schema.Int.annotations({
    description:
      "Replayed decisions whose effect under today's live set differs from the one recorded (policies changed since, redacted input, approval grants or provenance)"
  }),
  transitions: Schema.Array(Transition).annotations({
    description: "From the live set's effect to the candidate set's, every pair that occurred"
  }),
  affected_agents: Schema.Array(Schema.Struct({ agent_id: Schema.String, changed: Schema.Int })).annotations({
    description:
      "Agents whose decisions the candidate changes, by id: the first 1,000 met in replay order (changed counts all)"
  }),
  human_review: Schema.Struct({
    false_positive: Schema.Struct({
      reviewed: Schema.Int,
      now_permitted: Schema.Int,
      example_trace_ids: Schema.Array(Schema.String)
    }),
    missed_issue: Schema.Struct({
      reviewed: Schema.Int,
      now_caught: Schema.Int,
      example_trace_ids: Schema.Array(Schema.String)
    })
  }),
  redteam: Schema.Struct({
    landed: Schema.Int.annotations({ description: "Landed red-team attacks whose decision is in the window" }),
    would_block: Schema.Int,
    attacks: Schema.Array(Schema.Struct({ job_id: Schema.String, seq: Schema.Int, trace_id: Schema.String }))
  })
}).annotations({ identifier: "ImpactResult" })
export type ImpactResult = typeof ImpactResult.Type

export const ImpactJobStatus = Schema.Literal("queued", "running", "completed", "failed")

export class ImpactJob extends Schema.Class<ImpactJob>("ImpactJob")({
  id: ImpactJobId,
  status: ImpactJobStatus,
  progress: Schema.Struct({ replayed: Schema.Int, total: Schema.Int }),
  start: Timestamp,
  end: Timestamp,
  agent_id: Schema.NullOr(Schema.String),
  candidate_policy_count: Schema.Int,
  enable_ids: Schema.Array(Schema.String),
  disable_ids: Schema.Array(Schema.String),
  document_digests: Schema.Array(Schema.String).annotations({
    description: "Digests of the documents replayed as enabled; enabling one of them is vouched for (24 h)"
  }),
  result: Schema.NullOr(ImpactResult),
  result_digest: Schema.NullOr(Schema.String).annotations({
    description: "SHA-256 of the result's canonical JSON: the same replay gives the same digest"
  }),
  error: Schema.NullOr(Schema.String),
  created_at: Timestamp,
  started_at: Schema.NullOr(Timestamp),
  finished_at: Schema.NullOr(Timestamp)
}) {}
