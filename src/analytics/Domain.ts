/** Analytics catalog, metric queries, saved dashboard views and human-review analytics. */
import { Schema } from "effect"
import { boundedArray, Identifier, NonEmptyIdentifier, NonEmptyName, Name, Timestamp } from "../platform/Schemas.js"
import { RunKind } from "../runs/Domain.js"

export const ViewId = Identifier.pipe(Schema.brand("ViewId")).annotations({ identifier: "ViewId" })
export type ViewId = typeof ViewId.Type

// Metrics, dimensions and chart types are strings: the catalog is their source of truth and the
// handler checks them against it.

export const Catalog = Schema.Struct({
  chart_types: Schema.Array(Schema.String),
  dimensions: Schema.Array(Schema.Struct({ dimension: Schema.String, label: Schema.String })),
  facets: Schema.Array(
    Schema.Struct({ dimension: Schema.String, label: Schema.String, values: Schema.Array(Schema.String) })
  ),
  metrics: Schema.Array(
    Schema.Struct({ metric: Schema.String, label: Schema.String, default_chart_type: Schema.String })
  )
}).annotations({ identifier: "AnalyticsCatalog" })

/** At most 20 filters of 100 values each: a query's bind parameters stay far below PostgreSQL's 65,535. */
export const Filter = Schema.Struct({ dimension: Identifier, values: boundedArray(Identifier, 100) }).annotations({
  identifier: "AnalyticsFilter"
})

export const AnalyticsQuery = Schema.Struct({
  metric: NonEmptyIdentifier,
  group_by: Schema.optional(Identifier),
  filters: Schema.optional(boundedArray(Filter, 20)),
  start: Schema.optional(Timestamp),
  end: Schema.optional(Timestamp),
  /** With an interval the points are a time series (one per bucket) instead of per group. */
  interval: Schema.optional(Schema.Literal("hour", "day"))
})

export const QueryResult = Schema.Struct({
  metric: Schema.String,
  group_by: Schema.NullOr(Schema.String),
  points: Schema.Array(Schema.Struct({ label: Schema.String, value: Schema.Number })),
  total: Schema.Number
}).annotations({ identifier: "AnalyticsQueryResult" })

export const Widget = Schema.Struct({
  id: Identifier,
  title: Name,
  metric: Identifier,
  chart_type: Identifier,
  group_by: Schema.optional(Identifier),
  layout: Schema.optional(Schema.Struct({ x: Schema.Int, y: Schema.Int, w: Schema.Int, h: Schema.Int }))
}).annotations({ identifier: "AnalyticsWidget" })

export const ViewConfig = Schema.Struct({
  filters: boundedArray(Filter, 20),
  widgets: boundedArray(Widget, 50)
}).annotations({ identifier: "AnalyticsViewConfig" })

export class View extends Schema.Class<View>("AnalyticsView")({
  id: ViewId,
  name: Schema.String,
  is_default: Schema.Boolean,
  config: ViewConfig,
  created_at: Timestamp,
  updated_at: Timestamp
}) {}

export const CreateView = Schema.Struct({
  name: NonEmptyName,
  config: ViewConfig,
  is_default: Schema.optional(Schema.Boolean)
})

export const UpdateView = Schema.Struct({
  name: Schema.optional(NonEmptyName),
  config: Schema.optional(ViewConfig),
  is_default: Schema.optional(Schema.Boolean)
})

export const HumanReviewParams = Schema.Struct({
  agent_id: Schema.optional(Identifier),
  policy_id: Schema.optional(Identifier),
  run_kind: Schema.optional(RunKind),
  workflow_step: Schema.optional(Identifier)
})

const GroupCounts = Schema.Struct({
  group: Schema.String,
  human_intervention_count: Schema.Int,
  human_review_count: Schema.Int
})

export const HumanReviewAnalytics = Schema.Struct({
  summary: Schema.Struct({
    trace_count: Schema.Int,
    automated_intervention_count: Schema.Int,
    human_intervention_count: Schema.Int,
    human_review_count: Schema.Int,
    false_positive_rate: Schema.Number,
    human_intervention_rate: Schema.Number
  }),
  outcomes: Schema.Struct({
    accepted_count: Schema.Int,
    corrected_count: Schema.Int,
    false_positive_count: Schema.Int,
    ignored_count: Schema.Int,
    missed_issue_count: Schema.Int,
    rejected_count: Schema.Int
  }),
  by_agent: Schema.Array(GroupCounts),
  by_run_kind: Schema.Array(GroupCounts),
  by_policy: Schema.Array(
    Schema.Struct({
      policy_id: Schema.String,
      corrected_count: Schema.Int,
      escalation_count: Schema.Int,
      false_positive_count: Schema.Int
    })
  ),
  by_workflow_step: Schema.Array(
    Schema.Struct({
      workflow_step: Schema.String,
      corrected_count: Schema.Int,
      false_positive_count: Schema.Int,
      human_review_count: Schema.Int,
      rejected_count: Schema.Int
    })
  ),
  top_reasons: Schema.Array(Schema.Struct({ reason_code: Schema.String, count: Schema.Int })),
  /** Extension: the lists cut to their MAX_REVIEW_GROUPS groups with the most reviews. */
  truncated_lists: Schema.Array(Schema.String)
}).annotations({ identifier: "HumanReviewAnalytics" })
