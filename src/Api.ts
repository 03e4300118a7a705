/**
 * The whole HTTP contract: every group of `shared/spec/guardrail-api.md`
 * plus the documented extensions. OpenAPI is generated from it.
 */
import { HttpApi, OpenApi } from "@effect/platform"
import { AnalyticsApi } from "./analytics/Api.js"
import { AuditEventsApi } from "./audit/Api.js"
import { EventsApi, ReceiptsApi } from "./authorization/Api.js"
import { BudgetAlertsApi, LlmPricingApi, LlmUsageApi } from "./billing/Api.js"
import { AgentsApi, KnowledgeSourcesApi, LabelPoliciesApi, PoliciesApi, ToolMetadataApi } from "./catalog/Api.js"
import { GatewayProxyApi, GatewayRoutesApi, ProviderConnectionsApi } from "./gateway/Api.js"
import { McpProxyApi, McpServersApi } from "./mcp/Api.js"
import { ApiKeysApi, AuthApi, MeApi, EnvironmentsApi, SettingsApi, TeamApi } from "./identity/Api.js"
import { AnyHttpErrorWire } from "./http/Errors.js"
import { withOnlyErrorBody } from "./platform/OpenApiDocument.js"
import { AdminApi, MetricsApi } from "./operations/Api.js"
import { RedteamApi, RedteamReportsApi } from "./redteam/Api.js"
import { ReviewEventsApi, RunsApi, TracesApi } from "./runs/Api.js"
import { SystemApi } from "./system/Api.js"

export class GuardrailApi extends HttpApi.make("guardrail")
  .add(SystemApi)
  .add(AuthApi)
  .add(MeApi)
  .add(ApiKeysApi)
  .add(TeamApi)
  .add(SettingsApi)
  .add(EnvironmentsApi)
  .add(AgentsApi)
  .add(PoliciesApi)
  .add(LabelPoliciesApi)
  .add(ToolMetadataApi)
  .add(KnowledgeSourcesApi)
  .add(EventsApi)
  .add(ReceiptsApi)
  .add(RunsApi)
  .add(TracesApi)
  .add(ReviewEventsApi)
  .add(AnalyticsApi)
  .add(ProviderConnectionsApi)
  .add(GatewayRoutesApi)
  .add(GatewayProxyApi)
  .add(McpServersApi)
  .add(McpProxyApi)
  .add(LlmPricingApi)
  .add(LlmUsageApi)
  .add(BudgetAlertsApi)
  .add(RedteamApi)
  .add(RedteamReportsApi)
  .add(MetricsApi)
  .add(AdminApi)
  .add(AuditEventsApi)
  .addError(AnyHttpErrorWire)
  .annotate(OpenApi.Transform, withOnlyErrorBody)
  .annotate(OpenApi.Title, "Guardrail Service API")
  .annotate(OpenApi.Version, "1.0.0")
  .annotate(
    OpenApi.Description,
    "Authorization decisions, policies, runs, analytics, an LLM gateway and red-team testing for AI agents. Errors use the body {error: {code, message, details}}."
  ) {}
