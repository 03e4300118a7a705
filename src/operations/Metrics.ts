/**
 * Process metrics in the Prometheus text format (`GET /metrics`). Request
 * and decision metrics are effect `Metric`s updated where they happen (the
 * request plumbing, the authorization service); point-in-time gauges
 * (consumer lag, outbox backlog, budget reservations) are read from their
 * sources at scrape time. Other domains add a gauge with `registerGauge`.
 */
import type { SqlClient } from "@effect/sql"
import { Duration, Effect, Metric, MetricBoundaries, MetricKey, MetricState } from "effect"
import type { AppConfig } from "../platform/Config.js"
import { budgetReservationsInFlight, outboxBacklog as outboxRows } from "./Repo.js"

const requestsTotal = MetricKey.counter("guardrail_http_requests_total", {
  description: "HTTP requests answered, by method, route template and status."
})
const requestSeconds = MetricKey.histogram(
  "guardrail_http_request_duration_seconds",
  MetricBoundaries.fromIterable([0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]),
  "HTTP request latency in seconds, by method and route template."
)
const directRequestsTotal = MetricKey.counter("guardrail_http_direct_requests_total", {
  description: "Requests the fast lane answered on a direct path (warm state, no fiber), by route template."
})
const decisionsTotal = MetricKey.counter("guardrail_decisions_total", {
  description: "Authorization decisions answered, by effect."
})
const failedClosedTotal = MetricKey.counter("guardrail_decisions_failed_closed_total", {
  description:
    "Decisions deferred without being decided, by cause: decision_allowance_exceeded, service_allowance_exceeded, decision_time_exceeded, decision_failed, registry_unreadable, unrecorded."
})

/**
 * Tagged metrics are built once per label set, with the labels in their key:
 * `Metric.tagged` would add them on every update, building (and formatting)
 * a new metric key each time, and these are on every request's path.
 */
const memo = <M>(make: (key: string) => M) => {
  const cache = new Map<string, M>()
  return (key: string) => {
    let metric = cache.get(key)
    if (metric === undefined) {
      metric = make(key)
      cache.set(key, metric)
    }
    return metric
  }
}

const requestCounter = memo((key) => {
  const [method, route, status] = key.split(" ")
  return Metric.fromMetricKey(
    requestsTotal.pipe(
      MetricKey.tagged("method", method!),
      MetricKey.tagged("route", route!),
      MetricKey.tagged("status", status!)
    )
  )
})
const requestHistogram = memo((key) => {
  const [method, route] = key.split(" ")
  return Metric.fromMetricKey(
    requestSeconds.pipe(MetricKey.tagged("method", method!), MetricKey.tagged("route", route!))
  )
})
const directCounter = memo((route) => Metric.fromMetricKey(directRequestsTotal.pipe(MetricKey.tagged("route", route))))
const decisionCounter = memo((effect) => Metric.fromMetricKey(decisionsTotal.pipe(MetricKey.tagged("effect", effect))))

/** Called once per final response (src/http/AccessLog.ts). `route` is the template, never the raw path. */
export const recordRequest = (method: string, route: string, status: number, seconds: number) => {
  requestCounter(`${method} ${route} ${status}`).unsafeUpdate(1, [])
  requestHistogram(`${method} ${route}`).unsafeUpdate(seconds, [])
}

/** A request the fast lane answered on a direct path (src/http/Lane.ts): how much traffic runs on warm state. */
export const recordDirectRequest = (route: string) => directCounter(route).unsafeUpdate(1, [])

export const recordDecision = (effect: string) => decisionCounter(effect).unsafeUpdate(1, [])

const failedClosedCounter = memo((cause) =>
  Metric.fromMetricKey(failedClosedTotal.pipe(MetricKey.tagged("cause", cause)))
)

/** A decision that failed closed (also counted by `recordDecision` as `defer`), by why. */
export const recordFailedClosed = (cause: string) => failedClosedCounter(cause).unsafeUpdate(1, [])

// ---- gauges read at scrape time

export interface GaugeSample {
  readonly labels: Readonly<Record<string, string>>
  readonly value: number
}

export interface Gauge {
  readonly name: string
  readonly help: string
  /**
   * Reads the current values; a failing read, or one slower than GAUGE_READ_LIMIT, is reported as no samples
   * (and logged), never a failed or stuck scrape.
   */
  readonly read: Effect.Effect<ReadonlyArray<GaugeSample>, unknown, SqlClient.SqlClient | AppConfig>
}

const registered: Array<Gauge> = []

/** Adds a gauge to every scrape of this process (e.g. from a domain's layer). */
export const registerGauge = (gauge: Gauge) => {
  if (!registered.some((existing) => existing.name === gauge.name)) registered.push(gauge)
}

const outboxBacklog: Gauge = {
  name: "guardrail_outbox_backlog",
  help: "Events committed to the outbox and not yet published to the event log.",
  read: Effect.map(outboxRows, (count) => [{ labels: {}, value: count }])
}

/**
 * Strict budget admissions still holding budget (`llm_budget_reservations`, 0009): calls' own reservations
 * and processes' leases with something left; 0 where that table does not exist.
 */
const budgetReservations: Gauge = {
  name: "guardrail_budget_reservations_in_flight",
  help: "LLM budget reservations and leases holding budget (not yet settled, returned or expired).",
  read: Effect.map(budgetReservationsInFlight, (count) => [{ labels: {}, value: count }])
}

// ---- rendering

const escapeLabel = (value: string) => value.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"')

const labelText = (labels: ReadonlyArray<readonly [string, string]>) =>
  labels.length === 0 ? "" : `{${labels.map(([key, value]) => `${key}="${escapeLabel(value)}"`).join(",")}}`

const numberText = (value: number) =>
  value === Infinity ? "+Inf" : value === -Infinity ? "-Inf" : Number.isNaN(value) ? "NaN" : String(value)

/** The effect metrics of this process (counters and histograms), as Prometheus text. */
const renderEffectMetrics = Effect.map(Metric.snapshot, (pairs) => {
  const families = new Map<string, { type: string; help: string; lines: Array<string> }>()
  for (const pair of pairs) {
    const name = pair.metricKey.name
    if (!name.startsWith("guardrail_")) continue
    const labels = pair.metricKey.tags.map((tag) => [tag.key, tag.value] as const)
    const state = pair.metricState
    const help = pair.metricKey.description._tag === "Some" ? pair.metricKey.description.value : name
    if (MetricState.isCounterState(state)) {
      const family = families.get(name) ?? { type: "counter", help, lines: [] }
      family.lines.push(`${name}${labelText(labels)} ${numberText(Number(state.count))}`)
      families.set(name, family)
    } else if (MetricState.isHistogramState(state)) {
      const family = families.get(name) ?? { type: "histogram", help, lines: [] }
      for (const [boundary, count] of state.buckets) {
        family.lines.push(`${name}_bucket${labelText([...labels, ["le", numberText(boundary)]])} ${count}`)
      }
      if (!state.buckets.some(([boundary]) => boundary === Infinity)) {
        family.lines.push(`${name}_bucket${labelText([...labels, ["le", "+Inf"]])} ${state.count}`)
      }
      family.lines.push(`${name}_sum${labelText(labels)} ${numberText(state.sum)}`)
      family.lines.push(`${name}_count${labelText(labels)} ${state.count}`)
      families.set(name, family)
    }
  }
  return [...families.entries()].map(
    ([name, family]) => `# HELP ${name} ${family.help}\n# TYPE ${name} ${family.type}\n${family.lines.join("\n")}`
  )
})

/**
 * Below Prometheus' default scrape timeout (10 s): a source that does not answer (Kafka down, the admin client
 * retrying) leaves its gauge empty instead of taking every other metric of the scrape with it.
 */
export const GAUGE_READ_LIMIT = Duration.seconds(5)

const renderGauge = (gauge: Gauge) =>
  gauge.read.pipe(
    Effect.timeoutFail({
      duration: GAUGE_READ_LIMIT,
      onTimeout: () => `no answer within ${Duration.format(GAUGE_READ_LIMIT)}`
    }),
    Effect.catchAllCause((cause) =>
      Effect.logWarning(`metrics: gauge ${gauge.name} could not be read`, cause).pipe(
        Effect.as([] as ReadonlyArray<GaugeSample>)
      )
    ),
    Effect.map((samples) =>
      [
        `# HELP ${gauge.name} ${gauge.help}`,
        `# TYPE ${gauge.name} gauge`,
        ...samples.map(
          (sample) => `${gauge.name}${labelText(Object.entries(sample.labels))} ${numberText(sample.value)}`
        )
      ].join("\n")
    )
  )

/** The whole exposition: effect metrics, then the built-in and registered gauges (`extra` first). */
export const renderMetrics = Effect.fn("Metrics.render")(function* (extra: ReadonlyArray<Gauge>) {
  const counters = yield* renderEffectMetrics
  const gauges = yield* Effect.forEach([...extra, outboxBacklog, budgetReservations, ...registered], renderGauge, {
    concurrency: 4
  })
  return `${[...counters, ...gauges].join("\n")}\n`
})
