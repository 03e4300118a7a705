/**
 * Saved analytics views under hostile use: a workspace stores at most
 * MAX_ANALYTICS_VIEWS_PER_WORKSPACE views (set low here; the Overview every
 * workspace starts with counts), because `GET /v1/analytics/views` answers
 * them all, each up to 50 widgets and 20 filters of 100 values. Past the cap
 * a create is 409 analytics_view_limit_reached, even when sent at once; a
 * delete makes room; other workspaces are not affected. Views set as the
 * default at once leave exactly one default.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import type { CreateView } from "../../src/analytics/Domain.js"
import { expectFailure } from "../support/Api.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"

const MAX_VIEWS = 8

const view = (name: string): typeof CreateView.Type => ({
  name,
  config: {
    filters: [],
    widgets: [{ id: "traces", title: "Traces", metric: "trace_count", chart_type: "big_number" }]
  }
})

layer(testServer("database", { MAX_ANALYTICS_VIEWS_PER_WORKSPACE: String(MAX_VIEWS) }), SERVER_OPTIONS)(
  "analytics view limits",
  (it) => {
    it.effect("a view past the cap is 409 analytics_view_limit_reached, even when sent at once", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const other = yield* tenant(base)
        const create = (api: typeof owner.api, name: string) => api.analytics.createView({ payload: view(name) })
        // Before, there was no cap: every create was stored, and the unpaged list answered all of them.
        const names = Array.from({ length: MAX_VIEWS }, (_, index) => `view-${index}`)
        const outcomes = yield* Effect.forEach(names, (name) => Effect.either(create(owner.api, name)), {
          concurrency: "unbounded"
        })
        // The Overview takes one place.
        expect(outcomes.filter((outcome) => outcome._tag === "Right")).toHaveLength(MAX_VIEWS - 1)
        const refused = yield* expectFailure(create(owner.api, "one-more"), 409, "analytics_view_limit_reached")
        expect(refused.message).toMatch(/MAX_ANALYTICS_VIEWS_PER_WORKSPACE/)
        const { views } = yield* owner.api.analytics.listViews()
        expect(views).toHaveLength(MAX_VIEWS)
        // Another workspace has its own room.
        yield* create(other.api, "a")
        // A delete makes room again.
        yield* owner.api.analytics.deleteView({ path: { id: views.find((saved) => saved.name !== "Overview")!.id } })
        yield* create(owner.api, "after-a-delete")
      })
    )

    it.effect("views set as the default at once leave exactly one default", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        for (let index = 1; index < MAX_VIEWS; index++) {
          yield* owner.api.analytics.createView({ payload: view(`view-${index}`) })
        }
        const ids = (yield* owner.api.analytics.listViews()).views.map((saved) => saved.id)
        expect(ids).toHaveLength(MAX_VIEWS)
        // Before, each PATCH cleared only the defaults committed when it ran, so several could stay default.
        for (const round of [1, 2, 3]) {
          yield* Effect.forEach(
            ids,
            (id) => owner.api.analytics.updateView({ path: { id }, payload: { is_default: true } }),
            { concurrency: "unbounded", discard: true }
          )
          const defaults = (yield* owner.api.analytics.listViews()).views.filter((saved) => saved.is_default)
          expect(defaults, `round ${round}`).toHaveLength(1)
        }
      })
    )
  }
)
