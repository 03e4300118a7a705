/**
 * What analytics can answer: stored series, the metrics derived from them at
 * query time, dimensions and chart types. Aggregates store only additive
 * series (sums and latency sketches) per bucket; rates and the p95 are
 * computed when queried, so buckets of any range merge exactly.
 */

/** Series the aggregates store (one value per bucket and dimension tuple). */
export const Series = {
  decisions: "decisions",
  escalations: "escalations",
  reviews: "reviews",
  reviewReasons: "review_reasons",
  runs: "runs",
  runEvents: "run_events",
  llmCostMinor: "llm_cost_minor",
  llmPromptTokens: "llm_prompt_tokens",
  llmCompletionTokens: "llm_completion_tokens",
  redteamLanded: "redteam_landed"
} as const
export type SeriesName = (typeof Series)[keyof typeof Series]

/** A sum over one series, optionally restricted to some dimension values. */
export interface SeriesSum {
  readonly series: SeriesName
  readonly where?: Readonly<Record<string, ReadonlyArray<string>>>
}

export type MetricDefinition =
  | { readonly kind: "sum"; readonly of: SeriesSum }
  | { readonly kind: "ratio"; readonly numerator: SeriesSum; readonly denominator: SeriesSum }
  | { readonly kind: "quantile"; readonly of: SeriesSum; readonly q: number }

export interface MetricEntry {
  readonly metric: string
  readonly label: string
  readonly default_chart_type: ChartType
  readonly definition: MetricDefinition
}

export const chartTypes = ["big_number", "line", "bar", "table", "pie"] as const
export type ChartType = (typeof chartTypes)[number]

/** Review outcomes where a person changed or overrode what the guardrail did. */
export const interventionOutcomes = ["corrected", "rejected", "false_positive", "missed_issue"] as const

const decisionsWith = (effect: string): SeriesSum => ({ series: Series.decisions, where: { effect: [effect] } })
const sum = (series: SeriesName): MetricDefinition => ({ kind: "sum", of: { series } })

export const metrics: ReadonlyArray<MetricEntry> = [
  { metric: "trace_count", label: "Traces", default_chart_type: "big_number", definition: sum(Series.decisions) },
  { metric: "permit_count", label: "Permitted", default_chart_type: "line", definition: { kind: "sum", of: decisionsWith("permit") } },
  { metric: "deny_count", label: "Denied", default_chart_type: "line", definition: { kind: "sum", of: decisionsWith("deny") } },
  { metric: "defer_count", label: "Deferred", default_chart_type: "line", definition: { kind: "sum", of: decisionsWith("defer") } },
  { metric: "rewrite_count", label: "Rewritten", default_chart_type: "line", definition: { kind: "sum", of: decisionsWith("rewrite") } },
  {
    metric: "block_rate",
    label: "Block rate (denied / traces)",
    default_chart_type: "line",
    definition: { kind: "ratio", numerator: decisionsWith("deny"), denominator: { series: Series.decisions } }
  },
  {
    metric: "p95_latency_ms",
    label: "p95 decision latency (ms)",
    default_chart_type: "line",
    definition: { kind: "quantile", of: { series: Series.decisions }, q: 0.95 }
  },
  { metric: "escalation_count", label: "Escalations", default_chart_type: "bar", definition: sum(Series.escalations) },
  { metric: "review_count", label: "Human reviews", default_chart_type: "big_number", definition: sum(Series.reviews) },
  {
    metric: "false_positive_rate",
    label: "False-positive rate (false positives / reviews)",
    default_chart_type: "line",
    definition: {
      kind: "ratio",
      numerator: { series: Series.reviews, where: { outcome: ["false_positive"] } },
      denominator: { series: Series.reviews }
    }
  },
  {
    metric: "human_intervention_rate",
    label: "Human intervention rate (interventions / traces)",
    default_chart_type: "line",
    definition: {
      kind: "ratio",
      numerator: { series: Series.reviews, where: { outcome: interventionOutcomes } },
      denominator: { series: Series.decisions }
    }
  },
  { metric: "run_count", label: "Runs started", default_chart_type: "big_number", definition: sum(Series.runs) },
  { metric: "run_event_count", label: "Run events", default_chart_type: "line", definition: sum(Series.runEvents) },
  { metric: "llm_cost_minor", label: "LLM cost (minor units)", default_chart_type: "bar", definition: sum(Series.llmCostMinor) },
  { metric: "llm_prompt_tokens", label: "LLM prompt tokens", default_chart_type: "bar", definition: sum(Series.llmPromptTokens) },
  {
    metric: "llm_completion_tokens",
    label: "LLM completion tokens",
    default_chart_type: "bar",
    definition: sum(Series.llmCompletionTokens)
  },
  { metric: "redteam_landed", label: "Red-team attacks landed", default_chart_type: "big_number", definition: sum(Series.redteamLanded) }
]

export const dimensions: ReadonlyArray<{ readonly dimension: string; readonly label: string }> = [
  { dimension: "agent_id", label: "Agent" },
  { dimension: "environment_id", label: "Environment" },
  { dimension: "effect", label: "Decision effect" },
  { dimension: "policy_id", label: "Policy" },
  { dimension: "domain", label: "Check domain" },
  { dimension: "run_kind", label: "Run kind" },
  { dimension: "model", label: "Model" },
  { dimension: "principal_id", label: "Principal" },
  { dimension: "outcome", label: "Review outcome" },
  { dimension: "reason_code", label: "Review reason" },
  { dimension: "workflow_step", label: "Workflow step" },
  { dimension: "event_kind", label: "Run event kind" },
  { dimension: "usage_kind", label: "LLM usage kind" },
  { dimension: "currency", label: "Currency" },
  { dimension: "late", label: "Late event" }
]

export const metricNamed = (name: string) => metrics.find((entry) => entry.metric === name)
export const isDimension = (name: string) => dimensions.some((entry) => entry.dimension === name)
export const isChartType = (name: string): name is ChartType => (chartTypes as ReadonlyArray<string>).includes(name)
