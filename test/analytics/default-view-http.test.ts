/**
 * The Overview every new workspace starts with (issue 21): signup and
 * `POST /v1/team/my-workspaces` both create it as the default view, its
 * config passes the catalog's checks, and every widget's query answers, so
 * the dashboard's first visit shows real charts.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { DEFAULT_VIEW_CONFIG } from "../../src/analytics/DefaultView.js"
import { configProblems } from "../../src/analytics/Views.js"
import { clientAt } from "../support/Api.js"
import { createAgent, createPolicy, propose, reply } from "../support/Events.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"

const AGENT = "support-bot"

layer(testServer("database"), SERVER_OPTIONS)("default analytics view (database event log)", (it) => {
  describe("Overview", () => {
    it.effect("a new workspace has the Overview as its default view, with the five console widgets", () =>
      Effect.gen(function* () {
        expect(configProblems(DEFAULT_VIEW_CONFIG)).toEqual([])
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const { views } = yield* owner.api.analytics.listViews()
        expect(views).toHaveLength(1)
        const [overview] = views
        expect(overview).toMatchObject({ name: "Overview", is_default: true })
        expect(overview!.config.widgets.map((widget) => [widget.metric, widget.group_by ?? null])).toEqual([
          ["trace_count", "effect"],
          ["block_rate", null],
          ["p95_latency_ms", null],
          ["trace_count", "policy_id"],
          ["llm_cost_minor", null]
        ])

        // Every widget's query answers over real traffic.
        yield* createAgent(base, owner, AGENT)
        yield* createPolicy(base, owner, "no-discount", { value: "secret discount" })
        yield* propose(base, owner, AGENT, reply("hello"))
        yield* propose(base, owner, AGENT, reply("the secret discount"))
        for (const widget of overview!.config.widgets) {
          const result = yield* owner.api.analytics.queryAnalytics({
            payload: {
              metric: widget.metric,
              ...(widget.group_by === undefined ? {} : { group_by: widget.group_by }),
              ...(widget.chart_type === "line" ? { interval: "hour" as const } : {})
            }
          })
          expect(result.metric).toBe(widget.metric)
        }

        // A second workspace of the same user starts with its own Overview.
        const created = yield* owner.api.team.createWorkspace({ payload: { name: "Second" } })
        const inSecond = yield* clientAt(base, { token: owner.jwt, workspace: created.id })
        const second = (yield* inSecond.analytics.listViews()).views
        expect(second.map((view) => [view.name, view.is_default])).toEqual([["Overview", true]])
        expect(second[0]!.id).not.toBe(overview!.id)
      })
    )
  })
})
