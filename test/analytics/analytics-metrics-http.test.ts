/**
 * Streaming analytics end to end on Kafka: decisions, run events and review
 * events made over the API, and LLM usage written to its topic, reach the
 * aggregates through the analytics consumer; the query, catalog and
 * human-review endpoints read them back per workspace. Late events and saved
 * views are in analytics-late-views-http.test.ts.
 */
import { expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { Outbox } from "../../src/platform/Outbox.js"
import { Topics } from "../../src/platform/Topics.js"
import type { CreateReviewEvent, TraceId } from "../../src/runs/Domain.js"
import { createAgent, createPolicy, propose, reply } from "../support/Events.js"
import { until } from "../support/Eventually.js"
import { expectFailure } from "../support/Api.js"
import { call, expectError } from "../support/Raw.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import { byLabel, query, queryRaw, total } from "./analytics-helpers.js"

const AGENT = "support-bot"

layer(testServer("kafka"), SERVER_OPTIONS)("analytics over Kafka", (it) => {
  it.effect("decisions, run events, reviews and LLM usage become metrics, facets and human-review analytics", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const stranger = yield* tenant(base)
      yield* createAgent(base, owner, AGENT)
      yield* createPolicy(base, owner, "no-passwords", { value: "password" })

      const chat = yield* owner.api.runs.createRun({ payload: { agent_id: AGENT, kind: "chat_session" } })
      const flow = yield* owner.api.runs.createRun({ payload: { agent_id: AGENT, kind: "workflow" } })
      for (const kind of ["user_turn", "agent_turn", "tool_call"] as const) {
        yield* owner.api.runs.appendRunEvent({ path: { id: chat.id }, payload: { kind } })
      }
      for (const kind of ["user_turn", "agent_turn"] as const) {
        yield* owner.api.runs.appendRunEvent({ path: { id: flow.id }, payload: { kind } })
      }

      const step = { metadata: { workflow_step: "checkout" } }
      const refund = yield* propose(base, owner, AGENT, reply("I promise a full refund."), { run_id: chat.id })
      const password = yield* propose(base, owner, AGENT, reply("Tell me your password."), step)
      const others = [
        yield* propose(base, owner, AGENT, reply("That is a stupid idea.")),
        yield* propose(base, owner, AGENT, reply("Let me get our lawyer.")),
        yield* propose(base, owner, AGENT, reply("Your order ships tomorrow."), step),
        yield* propose(base, owner, AGENT, reply("Your order ships today."))
      ]
      const latencies = [refund, password, ...others].map((decision) => decision.latency_ms).sort((a, b) => a - b)
      expect([refund.effect, password.effect]).toEqual(["deny", "deny"])
      // Another workspace's traffic never shows up here.
      yield* createAgent(base, stranger, AGENT)
      yield* propose(base, stranger, AGENT, reply("I promise a full refund."))

      const review = (traceId: TraceId, payload: typeof CreateReviewEvent.Type) =>
        owner.api.reviewEvents.createReviewEvent({ path: { trace_id: traceId }, payload })
      yield* review(password.trace_id, { outcome: "false_positive", reason_codes: ["too_strict", "context"] })
      yield* review(refund.trace_id, { outcome: "corrected", reason_codes: ["too_strict"] })
      yield* review(refund.trace_id, { outcome: "accepted" })

      // LLM usage arrives from the gateway through its topic (written here as the gateway writes it).
      const sql = yield* SqlClient.SqlClient
      const outbox = yield* Outbox
      yield* sql.withTransaction(
        outbox.enqueue([
          {
            topic: Topics.llmUsage,
            key: owner.workspaceId,
            value: {
              schema_version: 1,
              id: "llmu_test_1",
              workspace_id: owner.workspaceId,
              api_key_id: null,
              principal_id: owner.user_id,
              request_id: "req_1",
              kind: "customer_inference",
              model: "gpt-test",
              prompt_tokens: 120,
              completion_tokens: 30,
              currency: "usd",
              cost_minor: 7,
              cost_usd_nanos: "70000000",
              effective_at: new Date().toISOString(),
              metadata: null,
              unpriced: false,
              agent_id: AGENT
            }
          }
        ])
      )

      yield* until(
        Effect.gen(function* () {
          expect(yield* total(base, owner, "trace_count")).toBe(6)
          expect(yield* total(base, owner, "run_event_count")).toBe(5)
          expect(yield* total(base, owner, "review_count")).toBe(3)
          expect(yield* total(base, owner, "llm_cost_minor")).toBe(7)
        }),
        "20 seconds"
      )
      expect(yield* total(base, owner, "deny_count")).toBe(2)
      expect(yield* total(base, owner, "rewrite_count")).toBe(1)
      expect(yield* total(base, owner, "defer_count")).toBe(1)
      expect(yield* total(base, owner, "permit_count")).toBe(2)
      expect(yield* total(base, owner, "escalation_count")).toBe(1)
      expect(yield* total(base, owner, "block_rate")).toBeCloseTo(2 / 6)
      expect(yield* total(base, owner, "run_count")).toBe(2)
      expect(yield* total(base, owner, "false_positive_rate")).toBeCloseTo(1 / 3)
      expect(yield* total(base, owner, "human_intervention_rate")).toBeCloseTo(2 / 6)
      expect(yield* total(base, owner, "llm_prompt_tokens")).toBe(120)
      expect(yield* total(base, owner, "llm_completion_tokens")).toBe(30)
      expect(yield* total(base, owner, "redteam_landed")).toBe(0)
      // The sketch's p95 is the upper bound of the bin holding the true p95 (bins at most 10 % wide).
      const trueP95 = latencies[Math.ceil(0.95 * latencies.length) - 1]!
      const p95 = yield* total(base, owner, "p95_latency_ms")
      expect(p95).toBeGreaterThanOrEqual(trueP95)
      expect(p95).toBeLessThanOrEqual(Math.ceil(trueP95 * 1.1) + 1)
      expect(yield* total(base, stranger, "trace_count")).toBe(1)

      // Grouping, filters and time series.
      const byEffect = yield* query(owner, { metric: "trace_count", group_by: "effect" })
      expect(byLabel(byEffect)).toEqual({ deny: 2, permit: 2, rewrite: 1, defer: 1 })
      expect(byEffect.total).toBe(6)
      expect(byEffect.group_by).toBe("effect")
      const byKind = yield* query(owner, { metric: "run_event_count", group_by: "run_kind" })
      expect(byLabel(byKind)).toEqual({ chat_session: 3, workflow: 2 })
      const denied = yield* query(owner, {
        metric: "trace_count",
        filters: [{ dimension: "effect", values: ["deny", "rewrite"] }]
      })
      expect(denied.total).toBe(3)
      expect(denied.points).toEqual([{ label: "total", value: 3 }])
      const byStep = yield* query(owner, { metric: "trace_count", group_by: "workflow_step" })
      expect(byLabel(byStep)).toMatchObject({ checkout: 2, "(none)": 4 })
      const byModel = yield* query(owner, { metric: "llm_prompt_tokens", group_by: "model" })
      expect(byLabel(byModel)).toEqual({ "gpt-test": 120 })

      const now = Date.now()
      const hour = 3_600_000
      const start = new Date(now - 3 * hour).toISOString()
      const end = new Date(now + hour).toISOString()
      const hourly = yield* query(owner, { metric: "trace_count", interval: "hour", start, end })
      expect(hourly.points.length).toBeGreaterThanOrEqual(4)
      expect(hourly.points.reduce((sum, point) => sum + point.value, 0)).toBe(6)
      expect(hourly.total).toBe(6)
      const thisHour = new Date(Math.floor(now / hour) * hour).toISOString()
      expect(byLabel(hourly)[thisHour]).toBe(6)
      const daily = yield* query(owner, { metric: "deny_count", interval: "day" })
      expect(daily.total).toBe(2)
      // A range over the last few minutes (minute buckets) and one that ended before anything happened.
      expect(
        yield* total(base, owner, "trace_count", {
          start: new Date(now - 10 * 60_000).toISOString(),
          end: new Date(now + 60_000).toISOString()
        })
      ).toBe(6)
      expect(
        yield* total(base, owner, "trace_count", { start: "2020-01-01T00:00:00.000Z", end: "2020-01-02T00:00:00.000Z" })
      ).toBe(0)
      // Ranges of days, hours and minutes together cover each event once.
      expect(
        yield* total(base, owner, "trace_count", {
          start: "2020-01-01T00:07:00.000Z",
          end: new Date(now + 2 * 86_400_000).toISOString()
        })
      ).toBe(6)

      // Unknown names are 400, never 500.
      yield* expectFailure(query(owner, { metric: "nope" }), 400, "unknown_metric")
      yield* expectFailure(query(owner, { metric: "trace_count", group_by: "color" }), 400, "unknown_dimension")
      yield* expectFailure(
        query(owner, { metric: "trace_count", filters: [{ dimension: "color", values: ["x"] }] }),
        400,
        "unknown_dimension"
      )
      yield* expectFailure(
        query(owner, { metric: "trace_count", start: "2026-01-02T00:00:00.000Z", end: "2026-01-01T00:00:00.000Z" }),
        400,
        "validation_failed"
      )
      // Raw: bodies the contract's schema refuses (not a timestamp, an unknown interval, no metric).
      expectError(yield* queryRaw(base, owner, { metric: "trace_count", start: "yesterday" }), 400, "validation_failed")
      expectError(yield* queryRaw(base, owner, { metric: "trace_count", interval: "week" }), 400)
      expectError(yield* queryRaw(base, owner, {}), 400)

      // Catalog: chart types, metrics, dimensions and the values seen in this workspace only.
      const catalog = yield* owner.api.analytics.getCatalog()
      expect(catalog.chart_types).toEqual(["big_number", "line", "bar", "table", "pie"])
      const metricNames = catalog.metrics.map((metric) => metric.metric)
      for (const name of [
        "trace_count",
        "permit_count",
        "deny_count",
        "defer_count",
        "rewrite_count",
        "block_rate",
        "p95_latency_ms",
        "review_count",
        "false_positive_rate",
        "human_intervention_rate",
        "run_count",
        "run_event_count",
        "llm_cost_minor",
        "llm_prompt_tokens",
        "llm_completion_tokens",
        "redteam_landed"
      ])
        expect(metricNames).toContain(name)
      for (const metric of catalog.metrics) {
        expect(metric.label.length).toBeGreaterThan(0)
        expect(catalog.chart_types).toContain(metric.default_chart_type)
      }
      const dimensionNames = catalog.dimensions.map((dimension) => dimension.dimension)
      for (const name of [
        "agent_id",
        "environment_id",
        "effect",
        "policy_id",
        "domain",
        "run_kind",
        "model",
        "principal_id"
      ]) {
        expect(dimensionNames).toContain(name)
      }
      const facet = (name: string) => catalog.facets.find((entry) => entry.dimension === name)?.values ?? []
      expect(facet("agent_id")).toEqual([AGENT])
      expect(facet("policy_id")).toContain("no-passwords")
      expect([...facet("run_kind")].sort()).toEqual(["chat_session", "workflow"])
      expect(facet("model")).toEqual(["gpt-test"])
      const strangerCatalog = yield* stranger.api.analytics.getCatalog()
      expect(strangerCatalog.facets.find((entry) => entry.dimension === "model")?.values).toEqual([])

      // Human-review analytics, from the aggregates.
      const report = yield* owner.api.analytics.getHumanReview({ urlParams: {} })
      expect(report.summary).toEqual({
        trace_count: 6,
        automated_intervention_count: 4,
        human_intervention_count: 2,
        human_review_count: 3,
        false_positive_rate: 1 / 3,
        human_intervention_rate: 2 / 6
      })
      expect(report.outcomes).toEqual({
        accepted_count: 1,
        corrected_count: 1,
        false_positive_count: 1,
        ignored_count: 0,
        missed_issue_count: 0,
        rejected_count: 0
      })
      expect(report.by_agent).toEqual([{ group: AGENT, human_intervention_count: 2, human_review_count: 3 }])
      expect(report.by_run_kind).toEqual([
        { group: "chat_session", human_intervention_count: 1, human_review_count: 2 }
      ])
      expect(report.by_policy).toContainEqual({
        policy_id: "no-passwords",
        corrected_count: 0,
        escalation_count: 0,
        false_positive_count: 1
      })
      expect(report.by_workflow_step).toEqual([
        {
          workflow_step: "checkout",
          corrected_count: 0,
          false_positive_count: 1,
          human_review_count: 1,
          rejected_count: 0
        }
      ])
      expect(report.top_reasons).toEqual([
        { reason_code: "too_strict", count: 2 },
        { reason_code: "context", count: 1 }
      ])
      const filtered = yield* owner.api.analytics.getHumanReview({
        urlParams: { policy_id: "no-passwords", workflow_step: "checkout" }
      })
      expect(filtered.summary).toMatchObject({ trace_count: 1, human_review_count: 1, human_intervention_count: 1 })
      const byRunKind = yield* owner.api.analytics.getHumanReview({
        urlParams: { run_kind: "chat_session", agent_id: "support-bot" }
      })
      expect(byRunKind.summary.human_review_count).toBe(2)
      expect(byRunKind.outcomes).toMatchObject({ corrected_count: 1, accepted_count: 1, false_positive_count: 0 })
      const nobody = yield* owner.api.analytics.getHumanReview({ urlParams: { agent_id: "someone-else" } })
      expect(nobody.summary).toMatchObject({ trace_count: 0, human_review_count: 0, false_positive_rate: 0 })
      // Raw: a run kind the contract's schema refuses.
      expectError(yield* call(base, "GET", "/v1/analytics/human-review?run_kind=banana", { token: owner.jwt }), 400)
      const strangerReport = yield* stranger.api.analytics.getHumanReview({ urlParams: {} })
      expect(strangerReport.summary).toMatchObject({ trace_count: 1, human_review_count: 0 })
    })
  )
})
