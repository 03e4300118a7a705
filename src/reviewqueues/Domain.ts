/** Review queues: the schemas of their contract. */
import { Schema } from "effect"
import { boundedArray, Identifier, NonEmptyName, Timestamp } from "../platform/Schemas.js"
import { Trace, TraceEffect } from "../runs/Domain.js"

export const ReviewQueueId = Identifier.pipe(Schema.brand("ReviewQueueId")).annotations({ identifier: "ReviewQueueId" })
export type ReviewQueueId = typeof ReviewQueueId.Type

export const SampleRate = Schema.Number.pipe(
  Schema.between(0, 1, { message: () => "must be a number from 0 to 1 (the share of matching traces kept)" })
)

/**
 * One rule: the traces that pass every condition it names (none: every trace), of which the
 * share `sample_rate` (else the queue's) is kept, chosen by a hash of the trace id.
 */
export const ReviewRule = Schema.Struct({
  agent_id: Schema.optional(Identifier),
  effect: Schema.optional(TraceEffect),
  policy_id: Schema.optional(Identifier).annotations({ description: "Traces with a finding of this policy" }),
  event_kind: Schema.optional(Schema.Literal("input.received", "tool.result", "output.proposed")),
  environment_id: Schema.optional(Identifier),
  sample_rate: Schema.optional(SampleRate)
}).annotations({ identifier: "ReviewRule" })
export type ReviewRule = typeof ReviewRule.Type

export const MAX_RULES = 20

export const ReviewRules = boundedArray(ReviewRule, MAX_RULES).pipe(
  Schema.minItems(1, { message: () => "must have at least one rule" })
)

export class ReviewQueue extends Schema.Class<ReviewQueue>("ReviewQueue")({
  id: ReviewQueueId,
  name: Schema.String,
  rules: Schema.Array(ReviewRule),
  sample_rate: Schema.Number,
  created_at: Timestamp,
  updated_at: Timestamp
}) {}

export const CreateReviewQueue = Schema.Struct({
  name: NonEmptyName,
  rules: ReviewRules,
  sample_rate: Schema.optional(SampleRate).annotations({ description: "Default 1: every matching trace" })
})
export type CreateReviewQueue = typeof CreateReviewQueue.Type

export const UpdateReviewQueue = Schema.Struct({
  name: Schema.optional(NonEmptyName),
  rules: Schema.optional(ReviewRules),
  sample_rate: Schema.optional(SampleRate)
})
export type UpdateReviewQueue = typeof UpdateReviewQueue.Type

export const ReviewQueueItems = Schema.Struct({
  progress: Schema.Struct({
    total: Schema.Int,
    reviewed: Schema.Int,
    pending: Schema.Int
  }).annotations({ description: "Over every trace in the queue, not just this page" }),
  items: Schema.Array(Trace),
  next_cursor: Schema.optional(Schema.String)
}).annotations({ identifier: "ReviewQueueItems" })
