/**
 * Streaming analytics on Kafka, continued: late events are counted in their
 * own bucket where they happened, and saved views are created, listed,
 * patched and deleted, validated against the catalog and scoped to the
 * workspace. Metrics, facets and human-review analytics from API traffic are
 * in analytics-metrics-http.test.ts.
 */
import { expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { Outbox } from "../../src/platform/Outbox.js"
import { Topics } from "../../src/platform/Topics.js"
import type { CreateView, Widget as WidgetSchema } from "../../src/analytics/Domain.js"
import { expectErrorShape } from "../catalog/catalog-helpers.js"
import { until } from "../support/Eventually.js"
import { clientAt, expectFailure, withRaw } from "../support/Api.js"
import { call, expectError } from "../support/Raw.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import { byLabel, query } from "./analytics-helpers.js"

const AGENT = "support-bot"

type Widget = typeof WidgetSchema.Type

/** A decision as the decision path publishes it (the topic's value), permitted with no policy. */
const decisionEvent = (
  owner: { readonly workspaceId: string; readonly defaultEnvironmentId: string },
  traceId: string,
  agentId: string,
  decidedAt: Date
) => ({
  topic: Topics.decisions,
  key: owner.workspaceId,
  value: {
    schema_version: 1,
    trace_id: traceId,
    workspace_id: owner.workspaceId,
    agent_id: agentId,
    environment_id: owner.defaultEnvironmentId,
    run_id: null,
    session_id: null,
    effect: "permit",
    status: "decided",
    domain: "content",
    policy_ids: [],
    latency_ms: 3,
    decided_at: decidedAt.toISOString()
  }
})

layer(testServer("kafka"), SERVER_OPTIONS)("analytics over Kafka", (it) => {
  it.effect("late events are counted in their own bucket, not dropped", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const sql = yield* SqlClient.SqlClient
      const outbox = yield* Outbox
      const decision = (decidedAt: Date, n: number) => decisionEvent(owner, `trc_late_${n}`, "late-agent", decidedAt)
      const twoHoursAgo = new Date(Date.now() - 2 * 3_600_000)
      yield* sql.withTransaction(
        outbox.enqueue([decision(twoHoursAgo, 1), decision(twoHoursAgo, 2), decision(new Date(), 3)])
      )
      const late = yield* until(
        Effect.gen(function* () {
          const result = yield* query(owner, { metric: "trace_count", group_by: "late" })
          expect(byLabel(result)).toEqual({ true: 2, false: 1 })
          return result
        }),
        "20 seconds"
      )
      expect(late.total).toBe(3)
      // Counted where they happened: the hour two hours ago holds the late ones.
      const hourly = yield* query(owner, {
        metric: "trace_count",
        interval: "hour",
        filters: [{ dimension: "late", values: ["true"] }]
      })
      expect(hourly.points).toEqual([
        { label: new Date(Math.floor(twoHoursAgo.getTime() / 3_600_000) * 3_600_000).toISOString(), value: 2 }
      ])
    })
  )

  it.effect("the catalog's facets hold each dimension's 100 most counted values, most counted first", () =>
    Effect.gen(function* () {
      const owner = yield* tenant(yield* baseUrl)
      const sql = yield* SqlClient.SqlClient
      const outbox = yield* Outbox
      const now = new Date()
      const rare = Array.from({ length: 101 }, (_, n) => `agent-${String(n).padStart(3, "0")}`)
      const agents = ["popular", "popular", "popular", "second", "second", ...rare]
      yield* sql.withTransaction(
        outbox.enqueue(agents.map((agent, n) => decisionEvent(owner, `trc_facet_${n}`, agent, now)))
      )
      yield* until(
        Effect.map(query(owner, { metric: "trace_count" }), (result) => expect(result.total).toBe(agents.length)),
        "20 seconds"
      )
      const catalog = yield* owner.api.analytics.getCatalog()
      const agentIds = catalog.facets.find((entry) => entry.dimension === "agent_id")?.values
      // Ties in count go by value: the last three of the rarely seen are left out.
      expect(agentIds).toEqual(["popular", "second", ...rare.slice(0, 98)])
    })
  )

  it.effect("saved views: create, list, patch, delete, validated against the catalog and scoped to the workspace", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const stranger = yield* tenant(base)
      const widget = (id: string, extra: Partial<Widget> = {}): Widget => ({
        id,
        title: `Widget ${id}`,
        metric: "trace_count",
        chart_type: "big_number",
        ...extra
      })
      const config = {
        filters: [{ dimension: "agent_id", values: [AGENT] }],
        widgets: [
          widget("a"),
          widget("b", {
            metric: "deny_count",
            chart_type: "line",
            group_by: "effect",
            layout: { x: 0, y: 0, w: 6, h: 4 }
          })
        ]
      }
      const views = owner.api.analytics
      // Every workspace starts with its default Overview view.
      const [starter, ...others] = (yield* views.listViews()).views
      expect(others).toEqual([])
      expect(starter).toMatchObject({ name: "Overview", is_default: true })
      const created = yield* views.createView({ payload: { name: "Overview", config } })
      expect(created).toMatchObject({ name: "Overview", is_default: false, config })
      expect(typeof created.id).toBe("string")
      expect(created.created_at).toMatch(/Z$/)

      const rejects = (payload: typeof CreateView.Type, path: string) =>
        Effect.map(expectFailure(views.createView({ payload }), 400, "validation_failed"), (error) => {
          expect(JSON.stringify(error.details ?? []), JSON.stringify(error)).toContain(path)
        })
      yield* rejects(
        { name: "x", config: { filters: [], widgets: [widget("a"), widget("a")] } },
        "config.widgets[1].id"
      )
      yield* rejects(
        { name: "x", config: { filters: [], widgets: [widget("a", { metric: "nope" })] } },
        "config.widgets[0].metric"
      )
      yield* rejects(
        { name: "x", config: { filters: [], widgets: [widget("a", { chart_type: "radar" })] } },
        "config.widgets[0].chart_type"
      )
      yield* rejects(
        { name: "x", config: { filters: [], widgets: [widget("a", { group_by: "color" })] } },
        "config.widgets[0].group_by"
      )
      yield* rejects(
        { name: "x", config: { filters: [], widgets: [widget("a", { layout: { x: -1, y: 0, w: 1, h: 1 } })] } },
        "config.widgets[0].layout.x"
      )
      yield* rejects(
        { name: "x", config: { filters: [{ dimension: "color", values: [] }], widgets: [] } },
        "config.filters[0].dimension"
      )
      // Raw: bodies the contract's schema refuses (a fractional layout, no config).
      expectError(
        yield* call(base, "POST", "/v1/analytics/views", {
          token: owner.jwt,
          body: {
            name: "x",
            config: { filters: [], widgets: [{ ...widget("a"), layout: { x: 0.5, y: 0, w: 1, h: 1 } }] }
          }
        }),
        400
      )
      expectError(yield* call(base, "POST", "/v1/analytics/views", { token: owner.jwt, body: { name: "x" } }), 400)

      const second = yield* views.createView({
        payload: { name: "Second", config: { filters: [], widgets: [] }, is_default: true }
      })
      const listed = yield* views.listViews()
      expect(listed.views.map((view) => view.id)).toEqual([second.id, created.id, starter!.id])

      const path = { id: created.id }
      const unchanged = yield* views.updateView({ path, payload: {} })
      expect(unchanged).toMatchObject({ name: "Overview", config })
      const renamed = yield* views.updateView({ path, payload: { name: "Renamed", is_default: true } })
      expect(renamed).toMatchObject({ name: "Renamed", is_default: true, config })
      const afterDefault = yield* views.listViews()
      expect(afterDefault.views.filter((view) => view.is_default).map((view) => view.id)).toEqual([created.id])
      yield* expectFailure(
        views.updateView({ path, payload: { config: { filters: [], widgets: [widget("z"), widget("z")] } } }),
        400,
        "validation_failed"
      )

      // Another workspace sees none of it.
      const theirs = yield* stranger.api.analytics.listViews()
      expect(theirs.views.map((view) => view.name)).toEqual(["Overview"])
      yield* expectFailure(stranger.api.analytics.updateView({ path, payload: {} }), 404, "view_not_found")
      yield* expectFailure(stranger.api.analytics.deleteView({ path }), 404, "view_not_found")

      const deleted = yield* withRaw(views.deleteView({ path, withResponse: true }))
      expect(deleted.status, deleted.text).toBe(204)
      expect(deleted.text).toBe("")
      yield* expectFailure(views.deleteView({ path }), 404, "view_not_found")
      yield* expectFailure(views.updateView({ path, payload: {} }), 404)
      const remaining = yield* views.listViews()
      expect(remaining.views.map((view) => view.id)).toEqual([second.id, starter!.id])
      // No credential: 401.
      const anonymous = yield* clientAt(base)
      expectErrorShape(yield* expectFailure(anonymous.analytics.listViews(), 401))
    })
  )
})
