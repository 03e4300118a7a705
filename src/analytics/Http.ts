/** Stub handlers of the analytics group; each answers 501 until implemented. */
import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { GuardrailApi } from "../Api.js"
import { notImplemented } from "../platform/Errors.js"

const stub = (what: string) => () => Effect.fail(notImplemented(what))

export const AnalyticsHttpLive = HttpApiBuilder.group(GuardrailApi, "analytics", (handlers) =>
  handlers
    .handle("getCatalog", stub("GET /v1/analytics/catalog"))
    .handle("queryAnalytics", stub("POST /v1/analytics/query"))
    .handle("listViews", stub("GET /v1/analytics/views"))
    .handle("createView", stub("POST /v1/analytics/views"))
    .handle("updateView", stub("PATCH /v1/analytics/views/{id}"))
    .handle("deleteView", stub("DELETE /v1/analytics/views/{id}"))
    .handle("getHumanReview", stub("GET /v1/analytics/human-review"))
)
