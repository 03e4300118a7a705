/**
 * Per-workspace caps of the gateway's configuration (set low here): every
 * provider connection and route is in its unpaged list, so a workspace may
 * store MAX_PROVIDER_CONNECTIONS_PER_WORKSPACE connections and
 * MAX_GATEWAY_ROUTES_PER_WORKSPACE routes. Past a cap a create is 409 with
 * the cap's code, concurrent creates cannot slip past it together, changing
 * what is stored never meets it, and other workspaces are not affected.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { expectFailure } from "../support/Api.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import { GATEWAY_SETTINGS, registerAgent } from "./gateway-helpers.js"

const SETTINGS = {
  ...GATEWAY_SETTINGS,
  MAX_PROVIDER_CONNECTIONS_PER_WORKSPACE: "2",
  MAX_GATEWAY_ROUTES_PER_WORKSPACE: "2"
}

layer(testServer("database", SETTINGS), SERVER_OPTIONS)("gateway limits", (it) => {
  it.effect("a 3rd connection or route of 2 is 409, even when sent at once; changes and other workspaces are not", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const other = yield* tenant(base)
      const connect = (api: typeof owner.api, name: string) =>
        api.providerConnections.createProviderConnection({
          payload: {
            display_name: name,
            kind: "chat_compatible",
            provider_api_key: Redacted.make("sk-cap"),
            base_url: "http://127.0.0.1:1/v1"
          }
        })
      const connections = yield* Effect.forEach([1, 2, 3, 4], (n) => Effect.either(connect(owner.api, `c${n}`)), {
        concurrency: "unbounded"
      })
      expect(connections.filter((outcome) => outcome._tag === "Right")).toHaveLength(2)
      const refused = yield* expectFailure(connect(owner.api, "one too many"), 409, "provider_connection_limit_reached")
      expect(refused.message).toMatch(/MAX_PROVIDER_CONNECTIONS_PER_WORKSPACE/)
      const stored = (yield* owner.api.providerConnections.listProviderConnections({})).provider_connections
      expect(stored).toHaveLength(2)
      // Changing a stored connection never meets the cap; another workspace has its own.
      yield* owner.api.providerConnections.updateProviderConnection({
        path: { id: stored[0]!.id },
        payload: { display_name: "renamed" }
      })
      yield* connect(other.api, "theirs")

      yield* registerAgent(owner, "capped-agent")
      const route = (name: string) =>
        owner.api.gatewayRoutes.createGatewayRoute({
          payload: { agent_id: "capped-agent", display_name: name, provider_connection_id: stored[0]!.id }
        })
      const routes = yield* Effect.forEach([1, 2, 3, 4], (n) => Effect.either(route(`r${n}`)), {
        concurrency: "unbounded"
      })
      expect(routes.filter((outcome) => outcome._tag === "Right")).toHaveLength(2)
      const refusedRoute = yield* expectFailure(route("one too many"), 409, "gateway_route_limit_reached")
      expect(refusedRoute.message).toMatch(/MAX_GATEWAY_ROUTES_PER_WORKSPACE/)
      const storedRoutes = (yield* owner.api.gatewayRoutes.listGatewayRoutes({})).gateway_routes
      expect(storedRoutes).toHaveLength(2)
      yield* owner.api.gatewayRoutes.updateGatewayRoute({
        path: { id: storedRoutes[0]!.id },
        payload: { provider_connection_id: stored[1]!.id }
      })
    })
  )
})
