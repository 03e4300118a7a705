/** Handlers of the gateway groups: provider connections, routes, and the proxy (raw, streamed). */
import { HttpApiBuilder, type HttpServerRequest } from "@effect/platform"
import { Effect, Layer } from "effect"
import { GuardrailApi } from "../Api.js"
import { inWorkspace } from "../identity/Authentication.js"
import { Connections } from "./Connections.js"
import { GatewayProxy } from "./Proxy.js"

export const ProviderConnectionsHttpLive = HttpApiBuilder.group(GuardrailApi, "providerConnections", (handlers) =>
  Effect.gen(function* () {
    const connections = yield* Connections
    return handlers
      .handle("listProviderConnections", () =>
        inWorkspace(connections.listConnections).pipe(Effect.map((list) => ({ provider_connections: list })))
      )
      .handle("createProviderConnection", ({ payload }) =>
        inWorkspace((ws) => connections.createConnection(ws, payload))
      )
      .handle("updateProviderConnection", ({ path, payload }) =>
        inWorkspace((ws) => connections.updateConnection(ws, path.id, payload))
      )
  })
).pipe(Layer.provide(Connections.Default))

export const GatewayRoutesHttpLive = HttpApiBuilder.group(GuardrailApi, "gatewayRoutes", (handlers) =>
  Effect.gen(function* () {
    const connections = yield* Connections
    return handlers
      .handle("listGatewayRoutes", () =>
        inWorkspace(connections.listRoutes).pipe(Effect.map((list) => ({ gateway_routes: list })))
      )
      .handle("createGatewayRoute", ({ payload }) => inWorkspace((ws) => connections.createRoute(ws, payload)))
      .handle("updateGatewayRoute", ({ path, payload }) =>
        inWorkspace((ws) => connections.updateRoute(ws, path.id, payload))
      )
  })
).pipe(Layer.provide(Connections.Default))

const textOf = (request: HttpServerRequest.HttpServerRequest) => Effect.orElseSucceed(request.text, () => "")

// Raw handlers: the body is handed on as sent and the answer streamed, never decoded as a whole.
export const GatewayProxyHttpLive = HttpApiBuilder.group(GuardrailApi, "gatewayProxy", (handlers) =>
  Effect.gen(function* () {
    const proxy = yield* GatewayProxy
    return handlers
      .handleRaw("proxyMessages", ({ path, request }) =>
        Effect.flatMap(textOf(request), (text) => proxy.forward("messages", path.id, { text, headers: request.headers }))
      )
      .handleRaw("proxyChatCompletions", ({ path, request }) =>
        Effect.flatMap(textOf(request), (text) => proxy.forward("chat", path.id, { text, headers: request.headers }))
      )
  })
).pipe(Layer.provide(GatewayProxy.Default))
