/**
 * Analytics queries whose answer has no natural bound: an hourly series with
 * no range over years of buckets, a group_by over every principal, a p95 per
 * principal. Each is a 400 naming the field to narrow once it would answer
 * more than MAX_QUERY_POINTS points (the database stops reading one cell past
 * it); the same queries narrowed answer 200. The human-review report's lists
 * keep their MAX_REVIEW_GROUPS groups with the most reviews. A dimension
 * value too long for the buckets' index is counted under its first bytes.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { randomBytes } from "node:crypto"
import { MAX_REVIEW_GROUPS } from "../../src/analytics/HumanReview.js"
import { MAX_DIMENSION_BYTES } from "../../src/analytics/Aggregates.js"
import { MAX_QUERY_POINTS } from "../../src/analytics/Query.js"
import { upperBoundOf } from "../../src/analytics/Sketch.js"
import { eventually } from "../support/Eventually.js"
import { createAgent, propose, reply } from "../support/Events.js"
import { seededTenant } from "../support/Seeded.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServerWithDatabase } from "../support/TestServer.js"
import { byLabel, query, queryRaw } from "./analytics-helpers.js"

const HOURS = MAX_QUERY_POINTS + 1
const FROM = "2024-01-01T00:00:00Z"

layer(testServerWithDatabase("database"), SERVER_OPTIONS)("analytics query bounds", (it) => {
  it.effect("a query past MAX_QUERY_POINTS is a 400 naming interval or group_by; narrowed it answers", () =>
    Effect.gen(function* () {
      // One hour bucket per hour over HOURS hours, and one day bucket per principal (HOURS principals).
      const { base, owner } = yield* seededTenant(
        `insert into analytics_buckets (workspace_id, granularity, bucket_start, series, dims, value, sketch)
         select $1, 'hour', $2::timestamptz + make_interval(hours => i), 'decisions', '{}', 1, null
         from generate_series(0, $3 - 1) i
         union all
         select $1, 'day', $2::timestamptz, 'decisions', jsonb_build_object('principal_id', 'p' || i), 1,
                array_fill(0::bigint, array[128])
         from generate_series(0, $3 - 1) i`,
        [FROM, HOURS]
      )
      const status = (body: Record<string, unknown>) => queryRaw(base, owner, { metric: "trace_count", ...body })

      const hourly = yield* status({ interval: "hour" })
      expect(hourly.status).toBe(400)
      expect(JSON.stringify(hourly.body)).toContain("interval")
      const narrowed = yield* status({ interval: "hour", start: FROM, end: "2024-01-08T00:00:00Z" })
      expect(narrowed.status).toBe(200)

      const grouped = yield* status({ group_by: "principal_id" })
      expect(grouped.status).toBe(400)
      expect(JSON.stringify(grouped.body)).toContain("group_by")
      const p95 = yield* status({ metric: "p95_latency_ms", group_by: "principal_id" })
      expect(p95.status).toBe(400)
      const filtered = yield* status({
        group_by: "principal_id",
        filters: [{ dimension: "principal_id", values: ["p1", "p2"] }]
      })
      expect(filtered.status).toBe(200)
    })
  )

  it.effect(
    "the human-review report lists at most MAX_REVIEW_GROUPS steps and policies, those with the most reviews",
    () =>
      Effect.gen(function* () {
        // Step s<i> has i + 1 corrected reviews: s0, with the fewest, is the one left out.
        const { owner } = yield* seededTenant(
          `insert into analytics_buckets (workspace_id, granularity, bucket_start, series, dims, value, sketch)
         select $1, 'day', $2::timestamptz, 'reviews',
                jsonb_build_object('workflow_step', 's' || i, 'policy_id', 'p' || i, 'outcome', 'corrected', 'agent_id', 'a1'),
                i + 1, null
         from generate_series(0, $3 - 1) i
         union all
         select $1, 'day', $2::timestamptz, 'escalations', jsonb_build_object('policy_id', 'e' || i), 1, null::bigint[]
         from generate_series(0, 299) i`,
          [FROM, MAX_REVIEW_GROUPS + 1]
        )
        const report = yield* owner.api.analytics.getHumanReview({ urlParams: {} })
        expect(report.by_workflow_step).toHaveLength(MAX_REVIEW_GROUPS)
        expect(report.by_workflow_step.map((step) => step.workflow_step)).not.toContain("s0")
        expect(report.by_workflow_step.find((step) => step.workflow_step === "s1")?.corrected_count).toBe(2)
        // Policies too: ranked by reviews, then escalations (p0 and the 300 escalated-only e<i> go, though their ids
        // sort first), listed by id.
        const policies = report.by_policy.map((policy) => policy.policy_id)
        expect(policies).toHaveLength(MAX_REVIEW_GROUPS)
        expect(policies).not.toContain("p0")
        expect(policies).toContain("p999")
        expect(policies.filter((policy) => policy.startsWith("e"))).toEqual([])
        expect(policies).toEqual([...policies].sort())
        expect(report.truncated_lists).toEqual(["by_policy", "by_workflow_step"])
        // The totals still count every review; one agent is listed whole.
        expect(report.summary.human_review_count).toBe(((MAX_REVIEW_GROUPS + 1) * (MAX_REVIEW_GROUPS + 2)) / 2)
        expect(report.by_agent).toEqual([
          {
            group: "a1",
            human_intervention_count: report.summary.human_review_count,
            human_review_count: report.summary.human_review_count
          }
        ])
        const narrowed = yield* owner.api.analytics.getHumanReview({ urlParams: { workflow_step: "s0" } })
        expect(narrowed.by_workflow_step).toEqual([
          { workflow_step: "s0", corrected_count: 1, false_positive_count: 0, human_review_count: 1, rejected_count: 0 }
        ])
        expect(narrowed.truncated_lists).toEqual([])
      })
  )

  it.effect("a workflow step holding the group separator (U+001F) is its own step, with its own outcomes", () =>
    Effect.gen(function* () {
      // Before, groups joined their values with U+001F: this step read as step "pay" with outcome "corrected".
      const { owner } = yield* seededTenant(
        `insert into analytics_buckets (workspace_id, granularity, bucket_start, series, dims, value, sketch)
         values ($1, 'day', $2::timestamptz, 'reviews',
                 jsonb_build_object('workflow_step', 'pay' || chr(31) || 'corrected', 'outcome', 'rejected',
                                    'agent_id', 'a1'), 1, null)`,
        [FROM]
      )
      const report = yield* owner.api.analytics.getHumanReview({ urlParams: {} })
      expect(report.by_workflow_step).toEqual([
        {
          workflow_step: "pay\u001fcorrected",
          corrected_count: 0,
          false_positive_count: 0,
          human_review_count: 1,
          rejected_count: 1
        }
      ])
    })
  )

  it.effect("a decision whose workflow step is too long for the index is counted under its first bytes", () =>
    Effect.gen(function* () {
      // Before, the bucket's insert failed (index row too large) and the decision was dead-lettered uncounted.
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      yield* createAgent(base, owner, "long-steps")
      // Random, so no compression brings it under the index's limit.
      const step = randomBytes(8_000).toString("base64")
      yield* propose(base, owner, "long-steps", reply("Your order ships tomorrow."), {
        metadata: { workflow_step: step }
      })
      const counted = yield* eventually(
        Effect.flatMap(query(owner, { metric: "trace_count", group_by: "workflow_step" }), (result) =>
          result.total === 1 ? Effect.succeed(byLabel(result)) : Effect.fail(result)
        ),
        "60 seconds"
      )
      const kept = `${step.slice(0, MAX_DIMENSION_BYTES - 3)}…`
      expect(counted).toEqual({ [kept]: 1 })
      // A step short enough to filter by (200 characters) but past the bound in bytes is found as sent.
      const accented = "ü".repeat(200)
      yield* propose(base, owner, "long-steps", reply("Your order ships today."), {
        metadata: { workflow_step: accented }
      })
      const filtered = yield* eventually(
        Effect.flatMap(
          query(owner, { metric: "trace_count", filters: [{ dimension: "workflow_step", values: [accented] }] }),
          (result) => (result.total === 1 ? Effect.succeed(result.total) : Effect.fail(result))
        ),
        "60 seconds"
      )
      expect(filtered).toBe(1)
    })
  )

  it.effect("a query without start or end counts every event the API accepted, from year 1 to year 9999", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      yield* createAgent(base, owner, "historian")
      const run = yield* owner.api.runs.createRun({ payload: { agent_id: "historian", kind: "job" } })
      // The earliest and latest instants an occurred_at may name, one before 1970, and one now.
      const earliest = "0001-01-01T00:00:00+23:59"
      const latest = "9999-12-31T23:59:59-23:59"
      for (const occurred_at of [earliest, "1969-07-20T20:17:00Z", latest, undefined]) {
        yield* owner.api.runs.appendRunEvent({
          path: { id: run.id },
          payload: { kind: "user_turn", ...(occurred_at === undefined ? {} : { occurred_at }) }
        })
      }
      const counted = yield* eventually(
        Effect.flatMap(query(owner, { metric: "run_event_count", start: earliest, end: latest }), (result) =>
          result.total === 4 ? Effect.succeed(result.total) : Effect.fail(result)
        ),
        "60 seconds"
      )
      expect(counted).toBe(4)
      // Before, an open range ran from 1970 to 9999-01-01: the first three were counted but never shown.
      expect((yield* query(owner, { metric: "run_event_count" })).total).toBe(4)
      const daily = yield* query(owner, { metric: "run_event_count", interval: "day" })
      expect(daily.points.map((point) => point.value)).toEqual([1, 1, 1, 1])
      expect(daily.points[0]!.label.startsWith("0000-12-31")).toBe(true)
    })
  )

  it.effect("a p95 over MAX_QUERY_POINTS cells answers each cell's merged sketch", () =>
    Effect.gen(function* () {
      // Each hour holds two sketches: 19 latencies in bin 3 (permits) and 1 in bin 100 (a deny); the last hour
      // has 2 denies. Before, every sketch was unnested into a row per (hour, bin), zero bins too: 1,280,000 rows
      // read into the process, and the request outlasted the client's 15 s deadline.
      const { owner } = yield* seededTenant(
        `insert into analytics_buckets (workspace_id, granularity, bucket_start, series, dims, value, sketch)
         select $1, 'hour', $2::timestamptz + make_interval(hours => h), 'decisions', jsonb_build_object('effect', e),
                n, (select array_agg(case when i = b + 1 then n else 0 end order by i) from generate_series(1, 128) i)
         from generate_series(0, $3 - 1) h,
              lateral (values ('permit', 3, 19), ('deny', 100, case when h = $3 - 1 then 2 else 1 end)) v(e, b, n)`,
        [FROM, MAX_QUERY_POINTS]
      )
      const result = yield* query(owner, { metric: "p95_latency_ms", interval: "hour" })
      expect(result.points).toHaveLength(MAX_QUERY_POINTS)
      // 20 latencies: the 19th is in bin 3; 21 in the last hour: the 20th is in bin 100.
      expect(result.points[0]).toEqual({ label: "2024-01-01T00:00:00.000Z", value: upperBoundOf(3) })
      expect(result.points.at(-1)!.value).toBe(upperBoundOf(100))
      expect(new Set(result.points.slice(0, -1).map((point) => point.value))).toEqual(new Set([upperBoundOf(3)]))
      // All merged: 190,000 in bin 3 of 200,001, so the p95 (the 190,001st) is in bin 100.
      expect(result.total).toBe(upperBoundOf(100))
      const byEffect = yield* query(owner, {
        metric: "p95_latency_ms",
        group_by: "effect",
        interval: "hour",
        start: FROM,
        end: "2024-01-01T01:00:00Z"
      })
      expect(byLabel(byEffect)).toEqual({
        "2024-01-01T00:00:00.000Z permit": upperBoundOf(3),
        "2024-01-01T00:00:00.000Z deny": upperBoundOf(100)
      })
    })
  )
})
