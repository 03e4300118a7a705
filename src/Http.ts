/**
 * Every group's handler layer, merged, with the identity services and the
 * credential middlewares they all rely on: provide this to `HttpApiBuilder.api(GuardrailApi)`.
 */
import { Effect, Layer } from "effect"
import { AnalyticsHttpLive } from "./analytics/Http.js"
import { eventsLane } from "./authorization/EventsLane.js"
import { type FastHandler, FastLaneRoutes } from "./http/Lane.js"
import { runsLane } from "./runs/RunsLane.js"
import { gatewayLane } from "./gateway/ProxyLane.js"
import { GatewayProxy } from "./gateway/Proxy.js"
import { AuthorizationLive, EventsHttpLive, ReceiptsHttpLive } from "./authorization/Http.js"
import { BudgetAlertsHttpLive, LlmPricingHttpLive, LlmUsageHttpLive } from "./billing/Http.js"
import {
  AgentsHttpLive,
  CatalogLive,
  KnowledgeSourcesHttpLive,
  LabelPoliciesHttpLive,
  PoliciesHttpLive,
  ToolMetadataHttpLive
} from "./catalog/Http.js"
import { GatewayProxyHttpLive, GatewayRoutesHttpLive, ProviderConnectionsHttpLive } from "./gateway/Http.js"
import {
  ApiKeysHttpLive,
  AuthHttpLive,
  EnvironmentsHttpLive,
  IdentityLive,
  SettingsHttpLive,
  TeamHttpLive
} from "./identity/Http.js"
import { AdminHttpLive, MetricsHttpLive } from "./operations/Http.js"
import { RedteamHttpLive, RedteamReportsHttpLive } from "./redteam/Http.js"
import { ReviewEventsHttpLive, RunsHttpLive, RunsLive, TracesHttpLive } from "./runs/Http.js"
import { SystemHttpLive } from "./system/Http.js"

export const ApiGroupsLive = Layer.mergeAll(
  SystemHttpLive,
  AuthHttpLive,
  ApiKeysHttpLive,
  TeamHttpLive,
  SettingsHttpLive,
  EnvironmentsHttpLive,
  AgentsHttpLive,
  PoliciesHttpLive,
  LabelPoliciesHttpLive,
  ToolMetadataHttpLive,
  KnowledgeSourcesHttpLive,
  EventsHttpLive,
  ReceiptsHttpLive,
  RunsHttpLive,
  TracesHttpLive,
  ReviewEventsHttpLive,
  AnalyticsHttpLive,
  ProviderConnectionsHttpLive,
  GatewayRoutesHttpLive,
  GatewayProxyHttpLive,
  LlmPricingHttpLive,
  LlmUsageHttpLive,
  BudgetAlertsHttpLive,
  RedteamHttpLive,
  RedteamReportsHttpLive,
  MetricsHttpLive,
  AdminHttpLive
).pipe(
  Layer.provide(Layer.mergeAll(AuthorizationLive, RunsLive)),
  Layer.provideMerge(CatalogLive),
  Layer.provideMerge(IdentityLive)
)

/** The endpoints the fast lane answers (src/platform/FastLane.ts), over the same service instances as the handlers. */
export const FastLaneRoutesLive = Layer.effect(
  FastLaneRoutes,
  Effect.map(Effect.all([eventsLane, runsLane, gatewayLane]), (lanes) => new Map<string, FastHandler>(lanes.flat()))
).pipe(
  Layer.provide(Layer.mergeAll(AuthorizationLive, RunsLive, GatewayProxy.Default)),
  Layer.provideMerge(CatalogLive),
  Layer.provideMerge(IdentityLive)
)
