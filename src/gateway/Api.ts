/** The gateway contract: provider connections, routes, and the two proxy dialects. */
import { Authentication } from "../identity/Authentication.js"
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import { Schema } from "effect"
import {
  CreateGatewayRoute,
  CreateProviderConnection,
  GatewayRoute,
  GatewayRouteId,
  ProviderConnection,
  ProviderConnectionId,
  ProviderMessage,
  UpdateGatewayRoute,
  UpdateProviderConnection
} from "./Domain.js"

export class ProviderConnectionsApi extends HttpApiGroup.make("providerConnections")
  .add(
    HttpApiEndpoint.get("listProviderConnections", "/gateway/provider-connections").addSuccess(
      Schema.Struct({ provider_connections: Schema.Array(ProviderConnection) })
    )
  )
  .add(
    HttpApiEndpoint.post("createProviderConnection", "/gateway/provider-connections")
      .setPayload(CreateProviderConnection)
      .addSuccess(ProviderConnection, { status: 201 })
  )
  .add(
    HttpApiEndpoint.patch("updateProviderConnection", "/gateway/provider-connections/:id")
      .setPath(Schema.Struct({ id: ProviderConnectionId }))
      .setPayload(UpdateProviderConnection)
      .addSuccess(ProviderConnection)
  )
  .prefix("/v1")
  .middleware(Authentication)
  .annotate(OpenApi.Description, "Upstream model providers; the provider key is write-only.") {}

export class GatewayRoutesApi extends HttpApiGroup.make("gatewayRoutes")
  .add(
    HttpApiEndpoint.get("listGatewayRoutes", "/gateway/routes").addSuccess(
      Schema.Struct({ gateway_routes: Schema.Array(GatewayRoute) })
    )
  )
  .add(
    HttpApiEndpoint.post("createGatewayRoute", "/gateway/routes")
      .setPayload(CreateGatewayRoute)
      .addSuccess(GatewayRoute, { status: 201 })
  )
  .add(
    HttpApiEndpoint.patch("updateGatewayRoute", "/gateway/routes/:id")
      .setPath(Schema.Struct({ id: GatewayRouteId }))
      .setPayload(UpdateGatewayRoute)
      .addSuccess(GatewayRoute)
  )
  .prefix("/v1")
  .middleware(Authentication)
  .annotate(
    OpenApi.Description,
    "Routes bind an agent to a provider connection; their id is the gateway path segment."
  ) {}

export const RoutePath = Schema.Struct({ id: GatewayRouteId })

// `messages_style` and `chat_style` are fixed literals naming the two request dialects.
export class GatewayProxyApi extends HttpApiGroup.make("gatewayProxy")
  .add(
    HttpApiEndpoint.post("proxyMessages", "/gateway/:id/messages_style/v1/messages")
      .setPath(RoutePath)
      .setPayload(ProviderMessage)
      .addSuccess(ProviderMessage)
  )
  .add(
    HttpApiEndpoint.post("proxyChatCompletions", "/gateway/:id/chat_style/chat/completions")
      .setPath(RoutePath)
      .setPayload(ProviderMessage)
      .addSuccess(ProviderMessage)
  )
  .prefix("/v1")
  .middleware(Authentication)
  .annotate(
    OpenApi.Description,
    "Model requests proxied through a gateway route, with LLM budget admission (402 budget_exceeded on refusal)."
  ) {}
