/**
 * Operations extensions: `GET /metrics` (Prometheus text, bearer METRICS_TOKEN)
 * and the platform admin's workspace feature flags.
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiMiddleware from "@effect/platform/HttpApiMiddleware"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as HttpApiSecurity from "@effect/platform/HttpApiSecurity"
import * as OpenApi from "@effect/platform/OpenApi"
import { Schema } from "effect"
import { Authentication } from "../identity/Authentication.js"
import { NotFoundWire, UnauthorizedWire } from "../http/Errors.js"
import { Identifier } from "../platform/Schemas.js"

/** Bearer METRICS_TOKEN; without a configured token the endpoint is off (404 `metrics_disabled`). */
export class MetricsAuthentication extends HttpApiMiddleware.Tag<MetricsAuthentication>()(
  "operations/MetricsAuthentication",
  {
    failure: Schema.Union(UnauthorizedWire, NotFoundWire),
    security: { metricsToken: HttpApiSecurity.bearer }
  }
) {}

export const PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"

export class MetricsApi extends HttpApiGroup.make("metrics")
  .add(HttpApiEndpoint.get("metrics", "/metrics").addSuccess(HttpApiSchema.Text({ contentType: PROMETHEUS_TEXT })))
  .middleware(MetricsAuthentication)
  .annotate(
    OpenApi.Description,
    "Extension: process metrics in the Prometheus text format (requests, latency, decisions, consumer lag, outbox backlog, budget reservations). Bearer METRICS_TOKEN."
  ) {}

export const WorkspaceFeatureFlags = Schema.Struct({
  workspace_id: Schema.String,
  is_attacks_enabled: Schema.Boolean,
  is_knowledge_base_enabled: Schema.Boolean,
  is_mcp_gateway_enabled: Schema.Boolean
}).annotations({ identifier: "WorkspaceFeatureFlags" })

export const UpdateWorkspaceFeatureFlags = Schema.Struct({
  is_attacks_enabled: Schema.optional(Schema.Boolean),
  is_knowledge_base_enabled: Schema.optional(Schema.Boolean),
  is_mcp_gateway_enabled: Schema.optional(Schema.Boolean)
}).annotations({ identifier: "UpdateWorkspaceFeatureFlags" })

export class AdminApi extends HttpApiGroup.make("admin")
  .add(
    HttpApiEndpoint.get("getWorkspaceFeatures", "/admin/workspaces/:id/features")
      .setPath(Schema.Struct({ id: Identifier }))
      .addSuccess(WorkspaceFeatureFlags)
  )
  .add(
    HttpApiEndpoint.patch("updateWorkspaceFeatures", "/admin/workspaces/:id/features")
      .setPath(Schema.Struct({ id: Identifier }))
      .setPayload(UpdateWorkspaceFeatureFlags)
      .addSuccess(WorkspaceFeatureFlags)
  )
  .prefix("/v1")
  .middleware(Authentication)
  .annotate(
    OpenApi.Description,
    "Extension: a platform admin (PLATFORM_ADMIN_USER_IDS) reads and sets a workspace's feature flags; other callers get 403 platform_admin_required."
  ) {}
