/** Runs, run events, traces and review events: the schemas of their contract. */
import { Schema } from "effect"
import {
  boundedArray,
  BoundedJson,
  CursorParam,
  Identifier,
  InstantParam,
  JsonValue,
  LongText,
  Name,
  nonEmptyBounded,
  Note,
  Timestamp
} from "../platform/Schemas.js"

export const RunId = Identifier.pipe(Schema.brand("RunId")).annotations({ identifier: "RunId" })
export type RunId = typeof RunId.Type
export const RunEventId = Identifier.pipe(Schema.brand("RunEventId")).annotations({ identifier: "RunEventId" })
export type RunEventId = typeof RunEventId.Type
export const TraceId = Identifier.pipe(Schema.brand("TraceId")).annotations({ identifier: "TraceId" })
export type TraceId = typeof TraceId.Type
export const ReviewEventId = Identifier.pipe(Schema.brand("ReviewEventId")).annotations({
  identifier: "ReviewEventId"
})
export type ReviewEventId = typeof ReviewEventId.Type

export const RunKind = Schema.Literal("chat_session", "live_call", "workflow", "job", "other")
export type RunKind = typeof RunKind.Type
export const RunStatus = Schema.Literal("warming", "running", "completed", "failed", "canceled")
export const RunEventKind = Schema.Literal(
  "user_turn",
  "agent_turn",
  "tool_call",
  "tool_result",
  "retrieval",
  "handoff",
  "error",
  "custom"
)
export const ReviewOutcome = Schema.Literal(
  "accepted",
  "corrected",
  "false_positive",
  "ignored",
  "missed_issue",
  "rejected"
)
export type ReviewOutcome = typeof ReviewOutcome.Type

// ---- runs

export class Run extends Schema.Class<Run>("Run")({
  id: RunId,
  agent_id: Schema.String,
  workspace_id: Schema.String,
  environment: Schema.String,
  environment_id: Schema.String,
  external_id: Schema.NullOr(Schema.String),
  kind: RunKind,
  status: RunStatus,
  blocked_count: Schema.Int,
  escalated_count: Schema.Int,
  rewritten_count: Schema.Int,
  trace_count: Schema.Int,
  p95_latency_ms: Schema.Int,
  metadata: JsonValue,
  created_at: Timestamp,
  started_at: Schema.NullOr(Timestamp),
  ended_at: Schema.NullOr(Timestamp),
  updated_at: Timestamp
}) {}

export const CreateRun = Schema.Struct({
  agent_id: Identifier,
  kind: RunKind,
  external_id: Schema.optional(Identifier),
  status: Schema.optional(RunStatus),
  environment_id: Schema.optional(Identifier),
  metadata: Schema.optional(BoundedJson)
})

/** Kind and agent are fixed at creation; timestamps are stamped by the server on status changes. */
export const UpdateRun = Schema.Struct({
  status: Schema.optional(RunStatus),
  external_id: Schema.optional(Schema.NullOr(Identifier)),
  metadata: Schema.optional(BoundedJson)
})

export const ListRunsParams = Schema.Struct({
  agent_id: Schema.optional(Identifier),
  status: Schema.optional(RunStatus),
  kind: Schema.optional(RunKind),
  external_id: Schema.optional(Identifier)
})

// ---- run events

export class RunEvent extends Schema.Class<RunEvent>("RunEvent")({
  id: RunEventId,
  run_id: RunId,
  workspace_id: Schema.String,
  kind: RunEventKind,
  sequence: Schema.Int.annotations({
    description: "Position of the event in its run; events are listed in this order"
  }),
  label: Schema.NullOr(Schema.String),
  input_summary: Schema.NullOr(Schema.String),
  output_summary: Schema.NullOr(Schema.String),
  metadata: JsonValue,
  created_at: Timestamp,
  occurred_at: Timestamp
}) {}

export const CreateRunEvent = Schema.Struct({
  kind: RunEventKind,
  label: Schema.optional(Name),
  input_summary: Schema.optional(LongText),
  output_summary: Schema.optional(LongText),
  metadata: Schema.optional(BoundedJson),
  /** When the event happened at the caller; defaults to receipt time. */
  occurred_at: Schema.optional(Timestamp)
})

/** Extension query of `GET /v1/runs/{id}/events`: the events around one of them instead of a page from the start. */
export const ListRunEventsParams = Schema.Struct({
  around: Schema.optional(RunEventId).annotations({
    description:
      "Extension: the id of an event of this run; lists the `limit` events nearest it by sequence (as many before as after, topped up from the other side near either end), in sequence order, with next_cursor for the events after them. Cannot be combined with cursor; 404 run_event_not_found when the run has no such event"
  })
})
export type ListRunEventsParams = typeof ListRunEventsParams.Type

// ---- traces

export const TraceEffect = Schema.Literal("permit", "deny", "defer", "rewrite")

/** Filters of `GET /v1/traces`; `after` turns the list into the live tail (oldest first, after that position). */
export const ListTracesParams = Schema.Struct({
  session_id: Schema.optional(Identifier),
  agent_id: Schema.optional(Identifier),
  run_id: Schema.optional(Identifier),
  effect: Schema.optional(TraceEffect),
  event_kind: Schema.optional(Schema.Literal("input.received", "tool.result", "output.proposed")),
  policy_id: Schema.optional(Identifier),
  environment_id: Schema.optional(Identifier),
  review_outcome: Schema.optional(Schema.Literal(...ReviewOutcome.literals, "unreviewed")),
  start: Schema.optional(InstantParam),
  end: Schema.optional(InstantParam),
  q: Schema.optional(nonEmptyBounded(200)).annotations({
    description: "Case-insensitive substring of a finding's reason"
  }),
  after: Schema.optional(CursorParam).annotations({
    description: "Live tail: a tail_cursor from an earlier answer; lists the traces after it, oldest first"
  })
})
export type ListTracesParams = typeof ListTracesParams.Type

/** Extension query of `GET /v1/runs/{id}/traces`: the decisions around one of them instead of the newest. */
export const ListRunTracesParams = Schema.Struct({
  around: Schema.optional(TraceId).annotations({
    description:
      "Extension: the id of a trace of this run; lists the `limit` traces nearest it in the list's order (newest first; as many newer as older, topped up from the other side near either end), with next_cursor for the older ones after them. Cannot be combined with cursor; 404 trace_not_found when the run has no such trace"
  })
})
export type ListRunTracesParams = typeof ListRunTracesParams.Type

export class Trace extends Schema.Class<Trace>("Trace")({
  trace_id: TraceId,
  agent_id: Schema.String.annotations({
    description: "Extension: the agent the decision was made for (the event's principal.agent_id)"
  }),
  run_id: Schema.NullOr(Schema.String),
  run_event_id: Schema.NullOr(Schema.String),
  session_id: Schema.NullOr(Schema.String),
  decision: Schema.String.annotations({ description: "The decision's effect: permit, deny, defer or rewrite" }),
  domain: Schema.String,
  environment: Schema.String,
  environment_id: Schema.String,
  elapsed_ms: Schema.Int,
  latest_review_outcome: Schema.NullOr(ReviewOutcome),
  latest_reviewed_at: Schema.NullOr(Timestamp),
  created_at: Timestamp,
  payload: JsonValue,
  policy_set_digest: Schema.NullOr(Schema.String).annotations({
    description:
      "Extension: the digest of the policy set that decided (GET /v1/policy-sets/{digest}); null for traces written before digests, or when the registry could not be read"
  })
}) {}

export const GuardrailUsage = Schema.Struct({
  phase: Schema.String,
  judge: Schema.String,
  provider: Schema.String,
  model: Schema.String,
  status: Schema.String,
  error_code: Schema.NullOr(Schema.String),
  prompt_tokens: Schema.Int,
  completion_tokens: Schema.Int,
  latency_ms: Schema.Int,
  estimated_cost_usd_nanos: Schema.String,
  fallback_used: Schema.Boolean
}).annotations({ identifier: "GuardrailUsage" })

export class RunDetail extends Schema.Class<RunDetail>("RunDetail")({
  run: Run,
  events: Schema.Array(RunEvent),
  traces: Schema.Array(Trace),
  guardrail_usage: Schema.Array(GuardrailUsage),
  budget_decision: JsonValue,
  provider_usage: JsonValue
}) {}

// ---- review events

export class ReviewEvent extends Schema.Class<ReviewEvent>("ReviewEvent")({
  id: ReviewEventId,
  trace_id: TraceId,
  run_id: Schema.NullOr(Schema.String),
  run_event_id: Schema.NullOr(Schema.String),
  workspace_id: Schema.String,
  reviewer_id: Schema.String,
  outcome: ReviewOutcome,
  reason_codes: Schema.Array(Schema.String),
  note: Schema.NullOr(Schema.String),
  metadata: JsonValue,
  created_at: Timestamp
}) {}

/** The reviewer is the caller; it is not taken from the body. */
export const CreateReviewEvent = Schema.Struct({
  outcome: ReviewOutcome,
  reason_codes: Schema.optional(boundedArray(Identifier, 100)),
  note: Schema.optional(Note),
  metadata: Schema.optional(BoundedJson)
})

// ---- topic values

/** The value of each `run-events` message (key: run id, so a run's events stay in order). */
export const RunEventMessage = Schema.Struct({
  schema_version: Schema.Literal(1),
  event_id: Schema.String,
  run_id: Schema.String,
  workspace_id: Schema.String,
  agent_id: Schema.String,
  environment_id: Schema.optional(Schema.String),
  run_kind: RunKind,
  kind: RunEventKind,
  sequence: Schema.Int,
  occurred_at: Schema.String
}).annotations({ identifier: "RunEventMessage" })
export type RunEventMessage = typeof RunEventMessage.Type

/**
 * The value of each `review-events` message (key: workspace id). The trace's
 * agent, policies and workflow step ride along so human-review analytics
 * never has to read traces.
 */
export const ReviewEventMessage = Schema.Struct({
  schema_version: Schema.Literal(1),
  review_event_id: Schema.String,
  trace_id: Schema.String,
  workspace_id: Schema.String,
  run_id: Schema.NullOr(Schema.String),
  reviewer_id: Schema.optional(Schema.String),
  agent_id: Schema.optional(Schema.NullOr(Schema.String)),
  environment_id: Schema.optional(Schema.NullOr(Schema.String)),
  run_kind: Schema.optional(Schema.NullOr(RunKind)),
  policy_ids: Schema.optional(Schema.Array(Schema.String)),
  workflow_step: Schema.optional(Schema.NullOr(Schema.String)),
  outcome: ReviewOutcome,
  reason_codes: Schema.Array(Schema.String),
  reviewed_at: Schema.String
}).annotations({ identifier: "ReviewEventMessage" })
export type ReviewEventMessage = typeof ReviewEventMessage.Type
