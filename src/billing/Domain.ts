/** LLM prices, LLM usage records, budget alert configs and their firings. */
import { Schema } from "effect"
import {
  boundedString,
  Identifier,
  InstantParam,
  JsonValue,
  NonEmptyName,
  Timestamp,
  Url
} from "../platform/Schemas.js"

export const BudgetAlertId = Identifier.pipe(Schema.brand("BudgetAlertId")).annotations({
  identifier: "BudgetAlertId"
})
export type BudgetAlertId = typeof BudgetAlertId.Type

/**
 * A sum kept as a database bigint, as a JSON integer: past 2^53 (no real workspace's, but prices and token
 * counts are the caller's) it answers the largest exact one rather than a number `Schema.Int` refuses.
 */
export const exactInt = (value: string | number) => Math.min(Number(value), Number.MAX_SAFE_INTEGER)

/** `*_usd_nanos` are decimal strings so that large sums stay exact. */
const UsdNanos = Schema.String.pipe(Schema.pattern(/^-?\d+$/)).annotations({
  description: "US dollars in nanos, as a decimal string"
})

// ---- pricing

export class LlmPrice extends Schema.Class<LlmPrice>("LlmPrice")({
  model: Schema.String.annotations({ description: "Trimmed lowercase model name" }),
  currency: Schema.String,
  input_per_million_minor: Schema.Int,
  output_per_million_minor: Schema.Int,
  input_per_million_usd_nanos: UsdNanos,
  output_per_million_usd_nanos: UsdNanos,
  source: Schema.String.annotations({ description: "Where the price comes from, e.g. workspace" })
}) {}

/**
 * The highest price, in cents per million tokens ($1 million): with the gateway's token bound per call
 * (MAX_COUNTED_TOKENS), one call costs at most $200 million, an exact 64-bit count of USD nanos.
 */
export const MAX_PRICE_PER_MILLION_MINOR = 100_000_000

/** Negative prices are refused (400): they would subtract from spend and defeat the budget gate. */
const PricePerMillionMinor = Schema.Int.pipe(Schema.between(0, MAX_PRICE_PER_MILLION_MINOR))

export const PutLlmPrice = Schema.Struct({
  input_per_million_minor: PricePerMillionMinor,
  output_per_million_minor: PricePerMillionMinor
})

/** The longest model name: a price's, and (raw, as sent) a gateway request's. */
export const MAX_MODEL_LENGTH = 256

/** A model name in a request: as long as a gateway request's, so every model called can be priced and filtered. */
export const ModelName = boundedString(MAX_MODEL_LENGTH)

// ---- usage

export const UsageKind = Schema.Literal("customer_inference", "guardrail")
export const UsageGroupBy = Schema.Literal("day", "principal", "agent", "model")

export class LlmUsageEvent extends Schema.Class<LlmUsageEvent>("LlmUsageEvent")({
  id: Schema.String,
  workspace_id: Schema.String,
  api_key_id: Schema.NullOr(Schema.String),
  principal_id: Schema.NullOr(Schema.String),
  request_id: Schema.String,
  kind: UsageKind,
  model: Schema.String,
  prompt_tokens: Schema.Int,
  completion_tokens: Schema.Int,
  currency: Schema.String,
  cost_minor: Schema.Int,
  cost_usd_nanos: UsdNanos,
  effective_at: Timestamp,
  metadata: JsonValue
}) {}

/** A usage record as the API returns it: the event plus what the gateway knew of the call. */
export class LlmUsageRecord extends Schema.Class<LlmUsageRecord>("LlmUsageRecord")({
  ...LlmUsageEvent.fields,
  /** True when the model had no price: cost is recorded as 0. */
  unpriced: Schema.Boolean,
  /** The agent whose route carried the call, when known. */
  agent_id: Schema.NullOr(Schema.String)
}) {}

export const LlmUsageParams = Schema.Struct({
  principal_id: Schema.optional(Identifier),
  model: Schema.optional(ModelName.annotations({ description: "The raw model string, matched exactly" })),
  kind: Schema.optional(UsageKind),
  start: Schema.optional(InstantParam.annotations({ description: "Inclusive, RFC 3339" })),
  end: Schema.optional(InstantParam.annotations({ description: "Exclusive, RFC 3339" })),
  group_by: Schema.optional(UsageGroupBy)
})

/**
 * One bucket of `group_by`: `key` is the UTC day (YYYY-MM-DD), the principal
 * id (null for events without a principal), the agent id (null for events
 * without an agent) or the model.
 */
export const UsageGroup = Schema.Struct({
  key: Schema.NullOr(Schema.String),
  event_count: Schema.Int,
  prompt_tokens: Schema.Int,
  completion_tokens: Schema.Int,
  cost_minor: Schema.Int,
  cost_usd_nanos: UsdNanos
}).annotations({ identifier: "LlmUsageGroup" })

/** The raw list without `group_by`, the buckets with it. */
export const LlmUsageResponse = Schema.Union(
  Schema.Struct({ events: Schema.Array(LlmUsageRecord), next_cursor: Schema.optional(Schema.String) }),
  Schema.Struct({ group_by: UsageGroupBy, groups: Schema.Array(UsageGroup) })
)

// ---- budget alerts

export const Meter = Schema.Literal("llm_spend", "actions")
export const ThresholdType = Schema.Literal("percent", "absolute")
export const BudgetWindow = Schema.Literal("day", "month")

export class BudgetAlertConfig extends Schema.Class<BudgetAlertConfig>("BudgetAlertConfig")({
  id: BudgetAlertId,
  workspace_id: Schema.String,
  name: Schema.String,
  meter: Meter,
  threshold_type: ThresholdType,
  threshold_value: Schema.Int,
  window: BudgetWindow,
  enabled: Schema.Boolean,
  principal_id: Schema.NullOr(Schema.String),
  webhook_url: Schema.NullOr(Schema.String).annotations({
    description: "Whole for admins and owners; masked (`https://host/***`) for members and runtime keys"
  }),
  created_at: Timestamp,
  updated_at: Timestamp
}) {}

const ThresholdValue = Schema.Int.pipe(Schema.positive())

export const CreateBudgetAlert = Schema.Struct({
  name: NonEmptyName,
  threshold_type: ThresholdType,
  threshold_value: ThresholdValue,
  window: BudgetWindow,
  meter: Schema.optional(Meter),
  enabled: Schema.optional(Schema.Boolean),
  principal_id: Schema.optional(Identifier),
  webhook_url: Schema.optional(Url)
})

/**
 * `principal_id` and `webhook_url` can be set but not cleared: null is
 * accepted by the schema only so the service can answer a 400 that says to
 * recreate the config.
 */
export const UpdateBudgetAlert = Schema.Struct({
  name: Schema.optional(NonEmptyName),
  threshold_type: Schema.optional(ThresholdType),
  threshold_value: Schema.optional(ThresholdValue),
  window: Schema.optional(BudgetWindow),
  meter: Schema.optional(Meter),
  enabled: Schema.optional(Schema.Boolean),
  principal_id: Schema.optional(Schema.NullOr(Identifier)),
  webhook_url: Schema.optional(Schema.NullOr(Url))
})

/** The create response: the config and, this once, the secret its webhooks are signed with. */
export class CreatedBudgetAlert extends Schema.Class<CreatedBudgetAlert>("CreatedBudgetAlert")({
  ...BudgetAlertConfig.fields,
  webhook_secret: Schema.String.annotations({
    description: "Standard Webhooks signing secret (whsec_...), shown only in this response"
  })
}) {}

export class WebhookAttempt extends Schema.Class<WebhookAttempt>("WebhookAttempt")({
  attempt: Schema.Int,
  attempted_at: Timestamp,
  duration_ms: Schema.Int,
  response_status: Schema.NullOr(Schema.Int),
  error: Schema.NullOr(Schema.String),
  succeeded: Schema.Boolean
}) {}

/** One firing's webhook delivery: `id` is the `webhook-id` header, the same on every attempt. */
export class WebhookDelivery extends Schema.Class<WebhookDelivery>("WebhookDelivery")({
  id: Schema.String,
  firing_id: Schema.String,
  url: Schema.String,
  status: Schema.Literal("pending", "succeeded", "failed"),
  attempt_count: Schema.Int,
  next_attempt_at: Schema.NullOr(Timestamp),
  created_at: Timestamp,
  updated_at: Timestamp,
  attempts: Schema.Array(WebhookAttempt)
}) {}

export class BudgetAlertFiring extends Schema.Class<BudgetAlertFiring>("BudgetAlertFiring")({
  id: Schema.String,
  config_id: BudgetAlertId,
  workspace_id: Schema.String,
  principal_id: Schema.NullOr(Schema.String),
  meter: Meter,
  currency: Schema.String,
  cap_minor: Schema.Int,
  spent_minor: Schema.Int,
  window_start: Timestamp,
  fired_at: Timestamp,
  payload: JsonValue
}) {}

// ---- topic values

/**
 * The value of each `llm-usage` message (key: workspace id), produced by the
 * gateway through the outbox and consumed by the usage store, the budget
 * alert worker and analytics. One message per upstream call.
 */
export const LlmUsageMessage = Schema.Struct({
  schema_version: Schema.Literal(1),
  ...LlmUsageEvent.fields,
  /** True when the model had no price: cost is recorded as 0. */
  unpriced: Schema.Boolean,
  /** The agent whose route carried the call, when known. */
  agent_id: Schema.NullOr(Schema.String)
}).annotations({ identifier: "LlmUsageMessage" })
export type LlmUsageMessage = typeof LlmUsageMessage.Type

/** The value of each `budget-firings` message (key: workspace id). */
export const BudgetFiringMessage = Schema.Struct({
  schema_version: Schema.Literal(1),
  ...BudgetAlertFiring.fields
}).annotations({ identifier: "BudgetFiringMessage" })
export type BudgetFiringMessage = typeof BudgetFiringMessage.Type
