/** Red-team plans, jobs, attack records, reports, share links and hardening results. */
import { Schema } from "effect"
import { Severity } from "../authorization/Domain.js"
import { PolicyDetail } from "../catalog/Domain.js"
import { Identifier, JsonValue, Name, Timestamp, Url } from "../platform/Schemas.js"

export const PlanId = Identifier.pipe(Schema.brand("PlanId")).annotations({ identifier: "RedteamPlanId" })
export type PlanId = typeof PlanId.Type
export const JobId = Identifier.pipe(Schema.brand("JobId")).annotations({ identifier: "RedteamJobId" })
export type JobId = typeof JobId.Type
/** A share token is the capability itself (>= 128 random bits). */
export const ShareToken = Identifier.pipe(Schema.brand("ShareToken")).annotations({ identifier: "ShareToken" })
export type ShareToken = typeof ShareToken.Type

export const Profile = Schema.Literal("quick", "standard", "deep").annotations({
  message: () => ({ message: "Expected one of quick, standard, deep", override: true }),
  description: "quick (about 20 attacks), standard (about 100), deep (multi-turn and variants, about 300)"
})
export const JobStatus = Schema.Literal("queued", "running", "completed", "failed", "canceled")
export const AttackOutcome = Schema.Literal("landed", "blocked", "clean", "error")

/** The only target accepted without `agent_id`: the weak demo agent shipped inside the service. */
export const DEMO_TARGET_URL = "demo://local-agent"

// ---- plans

export class Plan extends Schema.Class<Plan>("RedteamPlan")({
  id: PlanId,
  agent_id: Schema.String,
  name: Schema.String,
  generated_at: Timestamp,
  paths: Schema.Array(
    Schema.Struct({
      source_node: Schema.String,
      source_type: Schema.String,
      source_category: Schema.String,
      sink_node: Schema.String,
      sink_type: Schema.String,
      sink_category: Schema.String
    })
  ),
  unmapped_node_types: Schema.Array(Schema.String),
  vectors: Schema.Array(
    Schema.Struct({
      goal: Schema.String,
      injection_payload: Schema.String,
      target_operation: Schema.String,
      technique: Schema.String,
      source_path: JsonValue
    })
  )
}) {}

/** May be `{}`; the handler picks a name when none is given. */
export const CreatePlan = Schema.Struct({ name: Schema.optional(Name) })

// ---- attacks and jobs

export class AttackRecord extends Schema.Class<AttackRecord>("AttackRecord")({
  job_id: JobId,
  seq: Schema.Int,
  attack: Schema.String,
  goal: Schema.String,
  profile: Profile,
  target: Schema.String,
  prompt: Schema.String,
  reply: Schema.NullOr(Schema.String),
  outcome: AttackOutcome,
  landed: Schema.Boolean,
  category: Schema.String,
  severity: Severity,
  evidence: Schema.String,
  error: Schema.NullOr(Schema.String),
  trace_id: Schema.NullOr(Schema.String),
  created_at: Timestamp
}) {}

export class Job extends Schema.Class<Job>("RedteamJob")({
  id: JobId,
  agent_id: Schema.NullOr(Schema.String).annotations({
    description: "The agent attacked; null for demo://local-agent dispatched without an agent"
  }),
  workspace_id: Schema.String,
  environment_id: Schema.String,
  profile: Profile,
  target: Schema.String,
  status: JobStatus,
  attacks: Schema.Int,
  blocked: Schema.Int,
  landed: Schema.Int,
  error: Schema.NullOr(Schema.String),
  created_at: Timestamp,
  updated_at: Timestamp
}) {}

export const Dispatch = Schema.Struct({
  profile: Profile,
  target_url: Url.pipe(Schema.minLength(1, { message: () => "must not be empty" })),
  agent_id: Schema.optional(Identifier)
})

export const JobSession = Schema.Struct({
  session_id: Schema.String,
  runner_session_id: Schema.NullOr(Schema.String),
  case_id: Schema.String,
  seq: Schema.Int,
  trial_index: Schema.Int,
  attack: Schema.String,
  goal: Schema.String,
  kind: Schema.String,
  track: Schema.String,
  status: Schema.String,
  outcome: Schema.String,
  landed: Schema.Boolean,
  trace_id: Schema.NullOr(Schema.String),
  error: Schema.NullOr(Schema.String),
  events: Schema.Array(
    Schema.Struct({
      event_id: Schema.String,
      seq: Schema.Int,
      actor: Schema.String,
      kind: Schema.String,
      label: Schema.String,
      content_text: Schema.String,
      trace_id: Schema.NullOr(Schema.String),
      payload: JsonValue,
      created_at: Timestamp
    })
  )
}).annotations({ identifier: "RedteamJobSession" })

export const JobWithSessions = Schema.Struct({
  job: Job,
  sessions: Schema.Array(JobSession),
  next_cursor: Schema.optional(Schema.String).annotations({
    description: "More sessions follow (the page ended at 4 MiB of transcript): pass it as `cursor`"
  })
})

// ---- reports

export const RiskLevel = Schema.Literal("none", "low", "medium", "high", "critical")

export class Report extends Schema.Class<Report>("RedteamReport")({
  job: Job,
  generated_at: Timestamp,
  aggregates: Schema.Struct({
    total: Schema.Int,
    attacks: Schema.Int,
    landed: Schema.Int,
    blocked: Schema.Int,
    clean: Schema.Int,
    errored: Schema.Int,
    success_rate: Schema.Number.annotations({ description: "landed / (landed + blocked + clean); 0 when none" }),
    success_rate_all: Schema.Number.annotations({ description: "landed / total, errors included" }),
    risk_score: Schema.Number.pipe(Schema.between(0, 10)).annotations({
      description: "0-10: 10 × (1 − e^(−risk_points / 15)), one decimal (docs/redteam.md)"
    }),
    risk_points: Schema.Int.annotations({
      description: "Sum of severity weights of landed findings (low 1, medium 3, high 7, critical 10)"
    }),
    risk_level: RiskLevel
  }),
  findings: Schema.Array(
    Schema.Struct({
      seq: Schema.Int,
      attack: Schema.String,
      category: Schema.String,
      goal: Schema.String,
      prompt: Schema.String,
      evidence: Schema.String,
      outcome: AttackOutcome,
      landed: Schema.Boolean,
      severity: Severity,
      trace_id: Schema.NullOr(Schema.String)
    })
  ),
  comparison: JsonValue.annotations({ description: "Comparison with compare_job_id, or null" })
}) {}

export const ReportParams = Schema.Struct({ compare_job_id: Schema.optional(JobId) })

export const Comparison = Schema.Struct({
  compare_job_id: JobId,
  landed_before: Schema.Int,
  landed_now: Schema.Int,
  new: Schema.Array(Schema.Struct({ attack: Schema.String, category: Schema.String, severity: Severity })),
  fixed: Schema.Array(Schema.Struct({ attack: Schema.String, category: Schema.String, severity: Severity })),
  persisting: Schema.Array(Schema.Struct({ attack: Schema.String, category: Schema.String, severity: Severity }))
}).annotations({ identifier: "RedteamComparison" })

export class ShareLink extends Schema.Class<ShareLink>("RedteamShareLink")({
  token: ShareToken,
  path: Schema.String.annotations({ description: "Path of the public report, /v1/redteam/reports/{token}" }),
  html_path: Schema.String.annotations({ description: "Path of the human-readable report, /r/{token}" }),
  job_id: JobId,
  compare_job_id: Schema.NullOr(JobId),
  created_at: Timestamp,
  expires_at: Timestamp
}) {}

export const CreateShareLink = Schema.Struct({
  job_id: JobId,
  compare_job_id: Schema.optional(JobId),
  expires_in_days: Schema.optional(
    Schema.Int.pipe(Schema.between(1, 90)).annotations({ description: "Lifetime in days (default 7, at most 90)" })
  )
})

// ---- hardening

export const HardeningCandidate = Schema.Struct({
  operation: Schema.Literal("create", "reuse").annotations({
    description: "create: the policy was created (disabled); reuse: an identical candidate policy already exists"
  }),
  existing_policy_id: Schema.NullOr(Schema.String),
  source: Schema.String,
  substrate: Schema.String,
  evidence_seqs: Schema.Array(Schema.Int),
  policy: PolicyDetail,
  verify: Schema.Struct({
    blocked_landed: Schema.Int,
    blocked_variants: Schema.Int,
    control_total: Schema.Int,
    false_blocks: Schema.Int,
    landed_total: Schema.Int,
    variant_total: Schema.Int,
    passed: Schema.Boolean
  })
}).annotations({ identifier: "HardeningCandidate" })

export const HardeningRejection = Schema.Struct({
  reason: Schema.String.annotations({ description: "e.g. no_target_reply" }),
  message: Schema.String,
  substrate: Schema.String,
  evidence_seqs: Schema.Array(Schema.Int),
  verify: JsonValue
}).annotations({ identifier: "HardeningRejection" })

export const HardeningResult = Schema.Struct({
  generated_at: Timestamp,
  candidates: Schema.Array(HardeningCandidate),
  rejections: Schema.Array(HardeningRejection),
  unreachable: Schema.Array(Schema.String)
}).annotations({ identifier: "HardeningResult" })

/** May be `{}`. */
export const HardenRequest = Schema.Struct({})
