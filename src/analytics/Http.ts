/** Handlers of the analytics group: catalog, metric queries, saved views and human-review analytics. */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect, Layer } from "effect"
import { GuardrailApi } from "../Api.js"
import { inWorkspace } from "../identity/Authentication.js"
import { chartTypes, dimensions, metrics } from "./Catalog.js"
import { HumanReview } from "./HumanReview.js"
import { AnalyticsQueries } from "./Query.js"
import { AnalyticsRepo } from "./Repo.js"
import { Views } from "./Views.js"

const FACET_VALUES = 100

const catalog = Effect.fn("Analytics.catalog")(function* (workspaceId: string) {
  const repo = yield* AnalyticsRepo
  const seen = new Map<string, Array<string>>()
  for (const row of yield* repo.dimensionValues(workspaceId, FACET_VALUES)) {
    const values = seen.get(row.dimension) ?? []
    values.push(row.value)
    seen.set(row.dimension, values)
  }
  return {
    chart_types: [...chartTypes],
    dimensions: dimensions.map(({ dimension, label }) => ({ dimension, label })),
    facets: dimensions.map(({ dimension, label }) => ({ dimension, label, values: seen.get(dimension) ?? [] })),
    metrics: metrics.map(({ metric, label, default_chart_type }) => ({ metric, label, default_chart_type }))
  }
})

export const AnalyticsHttpLive = HttpApiBuilder.group(GuardrailApi, "analytics", (handlers) =>
  Effect.gen(function* () {
    const queries = yield* AnalyticsQueries
    const views = yield* Views
    const humanReview = yield* HumanReview
    const repo = yield* AnalyticsRepo
    return handlers
      .handle("getCatalog", () => inWorkspace((ws) => catalog(ws).pipe(Effect.provideService(AnalyticsRepo, repo))))
      .handle("queryAnalytics", ({ payload }) => inWorkspace((ws) => queries.run(ws, payload)))
      .handle("listViews", () => inWorkspace((ws) => views.list(ws)))
      .handle("createView", ({ payload }) => inWorkspace((ws) => views.create(ws, payload)))
      .handle("updateView", ({ path, payload }) => inWorkspace((ws) => views.update(ws, path.id, payload)))
      .handle("deleteView", ({ path }) => inWorkspace((ws) => views.remove(ws, path.id)))
      .handle("getHumanReview", ({ urlParams }) => inWorkspace((ws) => humanReview.report(ws, urlParams)))
  })
).pipe(
  Layer.provide(Layer.mergeAll(AnalyticsQueries.Default, Views.Default, HumanReview.Default, AnalyticsRepo.Default))
)
