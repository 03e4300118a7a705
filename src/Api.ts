/**
 * The whole HTTP contract: every group of `shared/spec/guardrail-api.md`
 * plus the documented extensions. OpenAPI is generated from it.
 */
import * as HttpApi from "@effect/platform/HttpApi"
import * as OpenApi from "@effect/platform/OpenApi"
import { JSONSchema, SchemaAST as AST } from "effect"
import { AnalyticsApi } from "./analytics/Api.js"
import { AuditEventsApi } from "./audit/Api.js"
import { ApprovalsApi, EventsApi, ReceiptsApi } from "./authorization/Api.js"
import { BudgetAlertsApi, LlmPricingApi, LlmUsageApi } from "./billing/Api.js"
import { AgentsApi, KnowledgeSourcesApi, LabelPoliciesApi, PoliciesApi, ToolMetadataApi } from "./catalog/Api.js"
import { PolicyImpactApi } from "./impact/Api.js"
import { GatewayProxyApi, GatewayRoutesApi, ProviderConnectionsApi } from "./gateway/Api.js"
import { McpProxyApi, McpServersApi } from "./mcp/Api.js"
import { ApiKeysApi, AuthApi, MeApi, EnvironmentsApi, SettingsApi, TeamApi } from "./identity/Api.js"
import { AnyHttpErrorWire } from "./http/Errors.js"
import { IdempotencyKey } from "./idempotency/Domain.js"
import { accessByGroup } from "./identity/Access.js"
import { documented, withOnlyErrorBody } from "./platform/OpenApiDocument.js"
import { AdminApi, MetricsApi } from "./operations/Api.js"
import { PolicySetsApi } from "./policysets/Api.js"
import { RedteamApi, RedteamReportsApi } from "./redteam/Api.js"
import { ReviewQueuesApi } from "./reviewqueues/Api.js"
import { ReviewEventsApi, RunsApi, TracesApi } from "./runs/Api.js"
import { SystemApi } from "./system/Api.js"

/** Error statuses beyond the ones an operation's shape implies (see `documented`), by operation or group. */
const extraStatuses = {
  // Sign-in throttles and the password hashing limit; signup can be turned off (SIGNUP_ENABLED).
  "auth.login": [429],
  "auth.signup": [403, 429],
  "auth.changePassword": [429],
  // Authenticates in its handler (a session or the internal key).
  "team.listMyWorkspaces": [401],
  "policies.draftPolicy": [422],
  // A workspace at its cap of queued and running jobs (MAX_REDTEAM_JOBS_PER_WORKSPACE, MAX_IMPACT_JOBS_PER_WORKSPACE).
  "redteam.dispatch": [429],
  // A workspace already hardening MAX_HARDENINGS_PER_WORKSPACE jobs.
  "redteam.hardenJob": [429],
  "policyImpact.startPolicyImpact": [429],
  // Budgets (402), calls in flight (429), the provider (502, 504).
  gatewayProxy: [402, 429, 502, 504],
  mcpProxy: [502]
}

/** Idempotency-Key (src/idempotency), read by the two hot writes' handlers rather than their contract. */
const { $schema: _dialect, ...idempotencyKeySchema } = JSONSchema.make(IdempotencyKey)
const idempotencyKeyHeader = {
  name: "Idempotency-Key",
  required: false,
  description: IdempotencyKey.ast.annotations[AST.DescriptionAnnotationId],
  schema: idempotencyKeySchema
}
const headers = { "events.authorizeEvent": [idempotencyKeyHeader], "runs.appendRunEvent": [idempotencyKeyHeader] }

const summaries = {
  "system.healthz": "Liveness probe",
  "system.readyz": "Readiness probe",
  "auth.login": "Log in",
  "auth.signup": "Sign up",
  "auth.oauthSession": "Exchange an OAuth identity for a session (internal)",
  "receipts.jwks": "Receipt verification keys (JWKS)",
  "llmPricing.putLlmPrice": "Set LLM price",
  "redteam.createPlan": "Create red-team plan",
  "redteam.listPlans": "List red-team plans",
  "redteam.deletePlan": "Delete red-team plan",
  "redteam.dispatch": "Dispatch red-team job",
  "redteam.listAttacks": "List red-team attacks",
  "redteam.listJobs": "List red-team jobs",
  "redteam.getJob": "Get red-team job",
  "redteam.cancelJob": "Cancel red-team job",
  "redteam.hardenJob": "Harden from red-team job",
  "redteam.getReport": "Get red-team report",
  "metrics.metrics": "Prometheus metrics",
  "mcpProxy.mcpMessage": "Send MCP message",
  "mcpProxy.mcpStream": "Open MCP event stream",
  "mcpProxy.mcpEndSession": "End MCP session"
}

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
  .add(PolicyImpactApi)
  .add(LabelPoliciesApi)
  .add(ToolMetadataApi)
  .add(PolicySetsApi)
  .add(KnowledgeSourcesApi)
  .add(EventsApi)
  .add(ReceiptsApi)
  .add(ApprovalsApi)
  .add(RunsApi)
  .add(TracesApi)
  .add(ReviewEventsApi)
  .add(ReviewQueuesApi)
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
  .annotate(OpenApi.Transform, (document) =>
    documented({ access: accessByGroup, extraStatuses, summaries, headers })(withOnlyErrorBody(document))
  )
  .annotate(OpenApi.Title, "Guardrail Service API")
  .annotate(OpenApi.Version, "1.0.0")
  .annotate(
    OpenApi.Description,
    "Authorization decisions, policies, runs, analytics, an LLM gateway and red-team testing for AI agents. Errors use the body {error: {code, message, details}}."
  ) {}
