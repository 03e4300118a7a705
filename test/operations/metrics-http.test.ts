/**
 * `GET /metrics`: Prometheus text behind the METRICS_TOKEN bearer, with
 * request counts and latency histograms per route, decisions per effect,
 * consumer lag per group/topic/partition (Kafka), the outbox backlog and
 * budget reservations in flight. Without a configured token it is off. A
 * gauge whose source does not answer is left empty, the scrape still answers.
 */
import { expect, layer } from "@effect/vitest"
import { HttpServer } from "@effect/platform"
import { Context, Duration, Effect, Exit, Layer, Scope } from "effect"
import { GAUGE_READ_LIMIT, renderMetrics } from "../../src/operations/Metrics.js"
import { RunId } from "../../src/runs/Domain.js"
import { clientAt, expectFailure } from "../support/Api.js"
import { sample, scrape as scrapeWith } from "../support/Metrics.js"
import { call } from "../support/Raw.js"
import { tenant } from "../support/Tenants.js"
import {
  baseUrl,
  SERVER_OPTIONS,
  TestDatabaseUrl,
  testServerOver,
  testServerWithDatabase
} from "../support/TestServer.js"
import { createPolicy, propose, reply } from "../support/Events.js"
import { until } from "../support/Eventually.js"

const TOKEN = "metrics-token-0123456789abcdef0123456789"

const scrape = (base: string) => scrapeWith(base, TOKEN)

layer(testServerWithDatabase("kafka", { METRICS_TOKEN: TOKEN }), SERVER_OPTIONS)("GET /metrics", (it) => {
  it.effect("needs the token; counts requests, latency and decisions; reports lag, backlog and reservations", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const db = yield* TestDatabaseUrl
      yield* expectFailure((yield* clientAt(base)).metrics.metrics(), 401, "unauthenticated")
      yield* expectFailure((yield* clientAt(base, { token: "wrong" })).metrics.metrics(), 401, "unauthenticated")

      const owner = yield* tenant(base)
      yield* createPolicy(base, owner, "no-refunds", { value: "refund" })
      const before = yield* scrape(base)
      const count = (text: string, labels: Record<string, string>) =>
        sample(text, "guardrail_http_requests_total", labels) ?? 0
      const decisions = (text: string, effect: string) => sample(text, "guardrail_decisions_total", { effect }) ?? 0

      for (let i = 0; i < 3; i++) yield* propose(base, owner, "bot", reply("Your order ships tomorrow."))
      yield* propose(base, owner, "bot", reply("I promise a refund."))
      yield* Effect.ignore(owner.api.runs.getRun({ path: { id: RunId.make("run_missing") } }))
      // Raw: a path outside the contract.
      yield* call(base, "GET", "/no/such/route")

      const after = yield* scrape(base)
      const events = { method: "POST", route: "/v1/events", status: "200" }
      expect(count(after, events) - count(before, events)).toBe(4)
      const missing = { method: "GET", route: "/v1/runs/:id", status: "404" }
      expect(count(after, missing) - count(before, missing)).toBe(1)
      expect(count(after, { route: "unmatched", status: "404" })).toBeGreaterThanOrEqual(1)
      expect(after).not.toContain("/no/such/route") // raw paths never become labels
      expect(decisions(after, "permit") - decisions(before, "permit")).toBe(3)
      expect(decisions(after, "deny") - decisions(before, "deny")).toBe(1)

      // Latency histogram per route: cumulative buckets ending in +Inf, with sum and count.
      const histogram = { method: "POST", route: "/v1/events" }
      const total = sample(after, "guardrail_http_request_duration_seconds_count", histogram)!
      expect(total).toBeGreaterThanOrEqual(4)
      expect(sample(after, "guardrail_http_request_duration_seconds_bucket", { ...histogram, le: "+Inf" })).toBe(total)
      expect(
        sample(after, "guardrail_http_request_duration_seconds_bucket", { ...histogram, le: "0.001" })
      ).toBeLessThanOrEqual(total)
      expect(sample(after, "guardrail_http_request_duration_seconds_sum", histogram)).toBeGreaterThan(0)
      expect(after).toContain("# TYPE guardrail_http_request_duration_seconds histogram")
      expect(after).toContain("# TYPE guardrail_decisions_total counter")

      // Gauges: no budget reservations (none taken), the outbox drains to 0, lag per partition of the decisions topic.
      expect(sample(after, "guardrail_outbox_backlog", {})).toBeGreaterThanOrEqual(0)
      expect(sample(after, "guardrail_budget_reservations_in_flight", {})).toBe(0)
      yield* until(
        Effect.map(scrape(base), (text) => {
          const partitions = ["0", "1", "2"].map((partition) =>
            sample(text, "guardrail_consumer_lag", { group: "run-counters", topic: "decisions", partition })
          )
          expect(
            partitions.every((lag) => lag !== undefined && lag >= 0),
            text
          ).toBe(true)
          expect(sample(text, "guardrail_outbox_backlog", {})).toBe(0)
        }),
        "20 seconds"
      )

      // Without METRICS_TOKEN the endpoint is off.
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(testServerOver("database", db), scope)
      const address = Context.get(context, HttpServer.HttpServer).address
      const plain = `http://127.0.0.1:${address._tag === "TcpAddress" ? address.port : 0}`
      yield* expectFailure((yield* clientAt(plain, { token: TOKEN })).metrics.metrics(), 404, "metrics_disabled")
      yield* Scope.close(scope, Exit.void)
    })
  )
})

layer(testServerWithDatabase("database", { METRICS_TOKEN: TOKEN }), SERVER_OPTIONS)(
  "GET /metrics (database event log)",
  (it) => {
    it.effect("consumer lag per group and topic of the database log falls to 0 once the consumers caught up", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        for (let i = 0; i < 3; i++) yield* propose(base, owner, "bot", reply(`answer ${i}`))
        yield* until(
          Effect.map(scrape(base), (text) => {
            expect(
              sample(text, "guardrail_consumer_lag", { group: "run-counters", topic: "decisions", partition: "0" }),
              text
            ).toBe(0)
            expect(sample(text, "guardrail_outbox_backlog", {})).toBe(0)
          }),
          "20 seconds"
        )
      })
    )

    it.effect("a gauge whose source never answers is left empty; the scrape answers with every other metric", () =>
      Effect.gen(function* () {
        const stuck = { name: "guardrail_test_stuck", help: "A source that never answers.", read: Effect.never }
        const started = Date.now()
        const text = yield* renderMetrics([stuck])
        expect(Date.now() - started).toBeLessThan(Duration.toMillis(GAUGE_READ_LIMIT) + 5_000)
        expect(text).toContain("# TYPE guardrail_test_stuck gauge")
        expect(text).not.toMatch(/^guardrail_test_stuck /m)
        expect(sample(text, "guardrail_outbox_backlog", {})).toBeGreaterThanOrEqual(0)
      })
    )
  }
)
