/** Handlers of the gateway groups: provider connections, routes, and the proxy (raw, streamed). */
import { HttpApiBuilder, type HttpServerRequest } from "@effect/platform"
import { Effect, Layer } from "effect"
import { GuardrailApi } from "../Api.js"
import { CurrentCaller, inWorkspace } from "../identity/Authentication.js"
import { Connections } from "./Connections.js"
import { currentRequestId, GatewayProxy } from "./Proxy.js"
import type { Dialect } from "./UsageMeter.js"

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
    const forward = (dialect: Dialect, routeId: string, request: HttpServerRequest.HttpServerRequest) =>
      Effect.gen(function* () {
        const caller = yield* CurrentCaller
        const requestId = yield* currentRequestId
        const text = yield* textOf(request)
        return yield* proxy.forward(dialect, routeId, { caller, requestId, text, headers: request.headers })
      })
    return handlers
      .handleRaw("proxyMessages", ({ path, request }) => forward("messages", path.id, request))
      .handleRaw("proxyChatCompletions", ({ path, request }) => forward("chat", path.id, request))
  })
).pipe(Layer.provide(GatewayProxy.Default))
