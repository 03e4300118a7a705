/**
 * Every group's handler layer, merged, with the identity services and the
 * credential middlewares they all rely on: provide this to `HttpApiBuilder.api(GuardrailApi)`.
 */
import { Context, Effect, Layer } from "effect"
import { AnalyticsHttpLive } from "./analytics/Http.js"
import { AuditLog } from "./audit/AuditLog.js"
import { AuditEventsHttpLive } from "./audit/Http.js"
import type { AnyHotEndpoint } from "./http/Hot.js"
import { GatewayGuard } from "./gateway/Guardrails.js"
import {
  ApprovalsHttpLive,
  authorizeEvent,
  AuthorizationLive,
  EventsHttpLive,
  ReceiptsHttpLive
} from "./authorization/Http.js"
import { BudgetAlertsHttpLive, LlmPricingHttpLive, LlmUsageHttpLive } from "./billing/Http.js"
import {
  AgentsHttpLive,
  CatalogLive,
  KnowledgeSourcesHttpLive,
  LabelPoliciesHttpLive,
  PoliciesHttpLive,
  ToolMetadataHttpLive
} from "./catalog/Http.js"
import {
  GatewayProxyHttpLive,
  GatewayRoutesHttpLive,
  ProviderConnectionsHttpLive,
  proxyChatCompletions,
  proxyMessages
} from "./gateway/Http.js"
import {
  ApiKeysHttpLive,
  AuthHttpLive,
  MeHttpLive,
  EnvironmentsHttpLive,
  IdentityLive,
  SettingsHttpLive,
  TeamHttpLive
} from "./identity/Http.js"
import { Idempotency } from "./idempotency/Idempotency.js"
import { PolicyImpactHttpLive } from "./impact/Http.js"
import { McpProxyHttpLive, McpServersHttpLive } from "./mcp/Http.js"
import { AdminHttpLive, MetricsHttpLive } from "./operations/Http.js"
import { PolicySetsHttpLive } from "./policysets/Http.js"
import { RedteamHttpLive, RedteamReportsHttpLive } from "./redteam/Http.js"
import { ReviewQueues } from "./reviewqueues/ReviewQueues.js"
import { ReviewQueuesHttpLive } from "./reviewqueues/Http.js"
import { appendRunEvent, ReviewEventsHttpLive, RunsHttpLive, RunsLive, TracesHttpLive } from "./runs/Http.js"
import { SystemHttpLive } from "./system/Http.js"

export const ApiGroupsLive = Layer.mergeAll(
  SystemHttpLive,
  AuthHttpLive,
  MeHttpLive,
  ApiKeysHttpLive,
  TeamHttpLive,
  SettingsHttpLive,
  EnvironmentsHttpLive,
  AgentsHttpLive,
  PoliciesHttpLive,
  PolicyImpactHttpLive,
  LabelPoliciesHttpLive,
  ToolMetadataHttpLive,
  PolicySetsHttpLive,
  KnowledgeSourcesHttpLive,
  EventsHttpLive,
  ReceiptsHttpLive,
  ApprovalsHttpLive,
  RunsHttpLive,
  TracesHttpLive,
  ReviewEventsHttpLive,
  ReviewQueuesHttpLive,
  AnalyticsHttpLive,
  ProviderConnectionsHttpLive,
  GatewayRoutesHttpLive,
  GatewayProxyHttpLive,
  McpServersHttpLive,
  McpProxyHttpLive,
  LlmPricingHttpLive,
  LlmUsageHttpLive,
  BudgetAlertsHttpLive,
  RedteamHttpLive,
  RedteamReportsHttpLive,
  MetricsHttpLive,
  AdminHttpLive,
  AuditEventsHttpLive
).pipe(
  Layer.provide(
    Layer.mergeAll(AuthorizationLive, RunsLive, AuditLog.Default, Idempotency.Default, ReviewQueues.Default)
  ),
  Layer.provideMerge(CatalogLive),
  Layer.provideMerge(IdentityLive)
)

/** The hot endpoints (src/http/Hot.ts): the fast lane runs the same declarations the groups above hand the router. */
export class HotEndpoints extends Context.Tag("app/HotEndpoints")<HotEndpoints, ReadonlyArray<AnyHotEndpoint>>() {}

export const HotEndpointsLive = Layer.effect(
  HotEndpoints,
  Effect.all([authorizeEvent, appendRunEvent, proxyMessages, proxyChatCompletions])
).pipe(
  // The gateway's guardrails decide through the same Authorization as the events endpoint.
  Layer.provide(GatewayGuard.Default),
  Layer.provide(Layer.mergeAll(AuthorizationLive, RunsLive, Idempotency.Default)),
  Layer.provideMerge(CatalogLive),
  Layer.provideMerge(IdentityLive)
)
