/**
 * Saved analytics views under hostile use: a workspace stores at most
 * MAX_ANALYTICS_VIEWS_PER_WORKSPACE views (set low here; the Overview every
 * workspace starts with counts), because `GET /v1/analytics/views` answers
 * them all, each up to 50 widgets and 20 filters of 100 values. Past the cap
 * a create is 409 analytics_view_limit_reached, even when sent at once; a
 * delete makes room; other workspaces are not affected.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import type { CreateView } from "../../src/analytics/Domain.js"
import { expectFailure } from "../support/Api.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"

const view = (name: string): typeof CreateView.Type => ({
  name,
  config: {
    filters: [],
    widgets: [{ id: "traces", title: "Traces", metric: "trace_count", chart_type: "big_number" }]
  }
})

layer(testServer("database", { MAX_ANALYTICS_VIEWS_PER_WORKSPACE: "3" }), SERVER_OPTIONS)(
  "analytics view limits",
  (it) => {
    it.effect("a 4th view of 3 is 409 analytics_view_limit_reached, even when sent at once", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const other = yield* tenant(base)
        const create = (api: typeof owner.api, name: string) => api.analytics.createView({ payload: view(name) })
        // Before, there was no cap: every create was stored, and the unpaged list answered all of them.
        const outcomes = yield* Effect.forEach(["a", "b", "c", "d"], (name) => Effect.either(create(owner.api, name)), {
          concurrency: "unbounded"
        })
        expect(outcomes.filter((outcome) => outcome._tag === "Right")).toHaveLength(2)
        const refused = yield* expectFailure(create(owner.api, "e"), 409, "analytics_view_limit_reached")
        expect(refused.message).toMatch(/MAX_ANALYTICS_VIEWS_PER_WORKSPACE/)
        const { views } = yield* owner.api.analytics.listViews()
        expect(views).toHaveLength(3)
        // Another workspace has its own room.
        yield* create(other.api, "a")
        // A delete makes room again.
        yield* owner.api.analytics.deleteView({ path: { id: views.find((saved) => saved.name !== "Overview")!.id } })
        yield* create(owner.api, "after-a-delete")
      })
    )
  }
)
