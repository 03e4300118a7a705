/** Rows of the red-team tables as decoded by Schema (Repo.ts). */
import { Schema } from "effect"
import { CutColumns } from "../platform/PageBytes.js"

export const PlanRow = Schema.Struct({
  id: Schema.String,
  workspace_id: Schema.String,
  agent_id: Schema.String,
  name: Schema.String,
  paths: Schema.Unknown,
  unmapped_node_types: Schema.Unknown,
  vectors: Schema.Unknown,
  created_at: Schema.DateFromSelf
})
export type PlanRow = typeof PlanRow.Type

export const JobRow = Schema.Struct({
  id: Schema.String,
  workspace_id: Schema.String,
  environment_id: Schema.String,
  agent_id: Schema.NullOr(Schema.String),
  profile: Schema.String,
  target: Schema.String,
  agent_profile: Schema.Unknown,
  status: Schema.String,
  error: Schema.NullOr(Schema.String),
  attacks: Schema.Number,
  landed: Schema.Number,
  blocked: Schema.Number,
  resume_count: Schema.Number,
  created_at: Schema.DateFromSelf,
  updated_at: Schema.DateFromSelf
})
export type JobRow = typeof JobRow.Type

export const AttackRow = Schema.Struct({
  job_id: Schema.String,
  workspace_id: Schema.String,
  seq: Schema.Number,
  case_id: Schema.String,
  attack: Schema.String,
  technique: Schema.String,
  category: Schema.String,
  goal: Schema.String,
  severity: Schema.String,
  kind: Schema.String,
  trial_index: Schema.Number,
  session_id: Schema.String,
  prompt: Schema.String,
  reply: Schema.NullOr(Schema.String),
  outcome: Schema.String,
  landed: Schema.Boolean,
  evidence: Schema.String,
  substrates: Schema.Unknown,
  trace_id: Schema.NullOr(Schema.String),
  error: Schema.NullOr(Schema.String),
  events: Schema.Unknown,
  created_at: Schema.DateFromSelf
})
export type AttackRow = typeof AttackRow.Type

export type NewAttack = Omit<AttackRow, "created_at">

/** An attack without its transcript (`reply`, `events`): what reports, comparisons and hardening read. */
export const FindingRow = AttackRow.pipe(Schema.omit("reply", "events"))
export type FindingRow = typeof FindingRow.Type

/** An attack as a job session: its transcript, without the record's texts. */
export const SessionRow = AttackRow.pipe(
  Schema.pick("seq", "case_id", "attack", "technique", "goal", "kind", "trial_index", "session_id", "outcome"),
  Schema.extend(AttackRow.pipe(Schema.pick("landed", "trace_id", "error", "events")))
)
export type SessionRow = typeof SessionRow.Type
export const PagedSessionRow = Schema.extend(SessionRow, CutColumns)

/** An attack record without its session (events, substrates), with its job's profile and target. */
export const AttackOfJobRow = Schema.extend(
  AttackRow.pipe(Schema.omit("events", "substrates")),
  Schema.extend(Schema.Struct({ profile: Schema.String, target: Schema.String }), CutColumns)
)
export type AttackOfJobRow = typeof AttackOfJobRow.Type

export const ShareLinkRow = Schema.Struct({
  workspace_id: Schema.String,
  job_id: Schema.String,
  compare_job_id: Schema.NullOr(Schema.String),
  created_at: Schema.DateFromSelf,
  expires_at: Schema.DateFromSelf
})
export type ShareLinkRow = typeof ShareLinkRow.Type
