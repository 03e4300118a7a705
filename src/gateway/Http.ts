/** Handlers of the gateway groups: provider connections, routes, and the proxy (raw, streamed). */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import type * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Effect, Layer } from "effect"
import { GuardrailApi } from "../Api.js"
import { Agents } from "../catalog/Agents.js"
import { type HotEndpoint, rawRouterHandler, type RawBody } from "../http/Hot.js"
import { inWorkspace } from "../identity/Authentication.js"
import { mapInput } from "../platform/Warm.js"
import type { RoutePath } from "./Api.js"
import { Connections } from "./Connections.js"
import { GatewayGuard } from "./Guardrails.js"
import type { Dialect } from "./UsageMeter.js"

export const ProviderConnectionsHttpLive = HttpApiBuilder.group(GuardrailApi, "providerConnections", (handlers) =>
  Effect.gen(function* () {
    const connections = yield* Connections
    // Writes are audited by the service, in a transaction opened once base_url is checked.
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
    // A route decides for one agent: its profile must exist (404 agent_not_found), as events' findings say.
    const agents = yield* Agents
    // Writes are audited by the service.
    return handlers
      .handle("listGatewayRoutes", () =>
        inWorkspace(connections.listRoutes).pipe(Effect.map((list) => ({ gateway_routes: list })))
      )
      .handle("createGatewayRoute", ({ payload }) =>
        inWorkspace((ws) =>
          Effect.zipRight(agents.requireRegistered(ws, payload.agent_id), connections.createRoute(ws, payload))
        )
      )
      .handle("updateGatewayRoute", ({ path, payload }) =>
        inWorkspace((ws) =>
          Effect.zipRight(agents.requireRegistered(ws, payload.agent_id), connections.updateRoute(ws, path.id, payload))
        )
      )
  })
).pipe(Layer.provide(Connections.Default))

/** A proxy route: the body is handed on as sent (or rewritten by a guardrail) and the answer streamed. */
const proxyRoute = <const Endpoint extends string>(endpoint: Endpoint, dialect: Dialect) =>
  Effect.map(
    GatewayGuard,
    (
      guard
    ): HotEndpoint<typeof RoutePath.Type, RawBody, HttpServerResponse.HttpServerResponse> & {
      readonly endpoint: Endpoint
    } => ({
      group: "gatewayProxy",
      endpoint,
      raw: true,
      direct: true,
      useCase: mapInput(guard.forward, (request) => ({
        caller: request.caller,
        dialect,
        routeId: request.path.id,
        requestId: request.requestId,
        text: request.payload.text,
        json: request.payload.json,
        headers: request.headers
      }))
    })
  )

/** The gateway's two dialects: the router and the fast lane run these declarations. */
export const proxyMessages = proxyRoute("proxyMessages", "messages")
export const proxyChatCompletions = proxyRoute("proxyChatCompletions", "chat")

export const GatewayProxyHttpLive = HttpApiBuilder.group(GuardrailApi, "gatewayProxy", (handlers) =>
  Effect.gen(function* () {
    const messages = yield* proxyMessages
    const chat = yield* proxyChatCompletions
    return handlers
      .handleRaw("proxyMessages", rawRouterHandler(messages))
      .handleRaw("proxyChatCompletions", rawRouterHandler(chat))
  })
).pipe(Layer.provide(GatewayGuard.Default))
