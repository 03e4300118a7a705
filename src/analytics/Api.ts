/** The analytics contract: catalog, metric queries, saved views and human-review analytics. */
import { ReportQuery } from "../http/Routes.js"
import { Authentication } from "../identity/Authentication.js"
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as OpenApi from "@effect/platform/OpenApi"
import { Schema } from "effect"
import {
  AnalyticsQuery,
  Catalog,
  CreateView,
  HumanReviewAnalytics,
  HumanReviewParams,
  QueryResult,
  UpdateView,
  View,
  ViewId
} from "./Domain.js"

const ViewPath = Schema.Struct({ id: ViewId })

export class AnalyticsApi extends HttpApiGroup.make("analytics")
  .add(HttpApiEndpoint.get("getCatalog", "/analytics/catalog").addSuccess(Catalog).annotate(ReportQuery, true))
  .add(
    HttpApiEndpoint.post("queryAnalytics", "/analytics/query")
      .setPayload(AnalyticsQuery)
      .addSuccess(QueryResult)
      .annotate(ReportQuery, true)
  )
  .add(HttpApiEndpoint.get("listViews", "/analytics/views").addSuccess(Schema.Struct({ views: Schema.Array(View) })))
  .add(HttpApiEndpoint.post("createView", "/analytics/views").setPayload(CreateView).addSuccess(View, { status: 201 }))
  .add(
    HttpApiEndpoint.patch("updateView", "/analytics/views/:id")
      .setPath(ViewPath)
      .setPayload(UpdateView)
      .addSuccess(View)
  )
  .add(HttpApiEndpoint.del("deleteView", "/analytics/views/:id").setPath(ViewPath).addSuccess(HttpApiSchema.NoContent))
  .add(
    HttpApiEndpoint.get("getHumanReview", "/analytics/human-review")
      .setUrlParams(HumanReviewParams)
      .addSuccess(HumanReviewAnalytics)
      .annotate(ReportQuery, true)
  )
  .prefix("/v1")
  .middleware(Authentication)
  .annotate(
    OpenApi.Description,
    "Analytics: the catalog of metrics and dimensions, metric queries, saved dashboard views and human-review analytics."
  ) {}
