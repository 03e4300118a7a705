/** Stub handlers of the gateway groups; each answers 501 until implemented. */
import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { GuardrailApi } from "../Api.js"
import { notImplemented } from "../platform/Errors.js"

const stub = (what: string) => () => Effect.fail(notImplemented(what))

export const ProviderConnectionsHttpLive = HttpApiBuilder.group(GuardrailApi, "providerConnections", (handlers) =>
  handlers
    .handle("listProviderConnections", stub("GET /v1/gateway/provider-connections"))
    .handle("createProviderConnection", stub("POST /v1/gateway/provider-connections"))
    .handle("updateProviderConnection", stub("PATCH /v1/gateway/provider-connections/{id}"))
)

export const GatewayRoutesHttpLive = HttpApiBuilder.group(GuardrailApi, "gatewayRoutes", (handlers) =>
  handlers
    .handle("listGatewayRoutes", stub("GET /v1/gateway/routes"))
    .handle("createGatewayRoute", stub("POST /v1/gateway/routes"))
    .handle("updateGatewayRoute", stub("PATCH /v1/gateway/routes/{id}"))
)

export const GatewayProxyHttpLive = HttpApiBuilder.group(GuardrailApi, "gatewayProxy", (handlers) =>
  handlers
    .handle("proxyMessages", stub("POST /v1/gateway/{id}/messages_style/v1/messages"))
    .handle("proxyChatCompletions", stub("POST /v1/gateway/{id}/chat_style/chat/completions"))
)
