/**
 * Gateway routes and LLM prices over HTTP: routes need a connection (and an
 * agent) of the same workspace and carry their guardrail modes, prices are
 * normalized and never negative, and each workspace sees only its own.
 * Provider connections (the encrypted, write-only provider key) are in
 * gateway-connections-http.test.ts.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { expectFailure, expectInvalid, keysOf, withRaw } from "../support/Api.js"
import { call, expectError, expectValidation } from "../support/Raw.js"
import { createKey, keyClient, tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServerWithDatabase } from "../support/TestServer.js"
import { GATEWAY_SETTINGS, registerAgent, setupGateway } from "./gateway-helpers.js"

layer(testServerWithDatabase("database", GATEWAY_SETTINGS), SERVER_OPTIONS)("gateway configuration", (it) => {
  describe("gateway routes", () => {
    it.effect("create, list and patch; the connection must be one of the workspace's", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const other = yield* tenant(base)
        const mine = yield* setupGateway(base, owner, "http://127.0.0.1:9", "bot-a")
        const theirs = yield* setupGateway(base, other, "http://127.0.0.1:9")
        const routes = owner.api.gatewayRoutes
        yield* registerAgent(owner, "bot-b")
        yield* registerAgent(owner, "bot-c")
        // A route's agent must be registered in the workspace.
        yield* expectFailure(
          routes.createGatewayRoute({
            payload: { agent_id: "ghost", display_name: "d", provider_connection_id: mine.connectionId }
          }),
          404,
          "agent_not_found"
        )
        yield* expectFailure(
          routes.updateGatewayRoute({ path: { id: mine.routeId }, payload: { agent_id: "ghost" } }),
          404,
          "agent_not_found"
        )

        const { body: listedBody, value: listed } = yield* withRaw(routes.listGatewayRoutes({ withResponse: true }))
        expect(listed.gateway_routes).toHaveLength(1)
        // The keys as sent: the client's decoding would drop any field the schema does not know.
        const sent = listedBody as { readonly gateway_routes: ReadonlyArray<unknown> }
        expect(keysOf(sent.gateway_routes[0])).toEqual([
          "agent_id",
          "created_at",
          "display_name",
          "guardrails",
          "id",
          "provider_connection_id",
          "updated_at"
        ])
        expect(listed.gateway_routes[0]).toMatchObject({
          id: mine.routeId,
          agent_id: "bot-a",
          provider_connection_id: mine.connectionId,
          // Screening is on unless a route says otherwise.
          guardrails: { input: "enforce", output: "enforce", tool_calls: "enforce" }
        })

        const foreign = yield* expectFailure(
          routes.createGatewayRoute({
            payload: { agent_id: "bot-a", display_name: "d", provider_connection_id: theirs.connectionId }
          }),
          404,
          "provider_connection_not_found"
        )
        expect(foreign.details?.[0]?.path).toBe("provider_connection_id")
        // A body without the connection is refused by the schema: the typed client cannot send it.
        expectValidation(
          yield* call(base, "POST", "/v1/gateway/routes", {
            token: owner.jwt,
            body: { agent_id: "a", display_name: "d" }
          }),
          "provider_connection_id"
        )

        const path = { id: mine.routeId }
        const patched = yield* routes.updateGatewayRoute({
          path,
          payload: { display_name: "Renamed", agent_id: "bot-b" }
        })
        expect(patched).toMatchObject({
          display_name: "Renamed",
          agent_id: "bot-b",
          provider_connection_id: mine.connectionId
        })
        // Guardrail modes: set on create, and a PATCH changes only the directions it names.
        const observed = yield* routes.createGatewayRoute({
          payload: {
            agent_id: "bot-c",
            display_name: "Observed",
            provider_connection_id: mine.connectionId,
            guardrails: { input: "observe" }
          }
        })
        expect(observed.guardrails).toEqual({ input: "observe", output: "enforce", tool_calls: "enforce" })
        const relaxed = yield* routes.updateGatewayRoute({
          path: { id: observed.id },
          payload: { guardrails: { tool_calls: "off" } }
        })
        expect(relaxed.guardrails).toEqual({ input: "observe", output: "enforce", tool_calls: "off" })
        expectValidation(
          yield* call(base, "PATCH", `/v1/gateway/routes/${observed.id}`, {
            token: owner.jwt,
            body: { guardrails: { output: "sometimes" } }
          }),
          "guardrails.output"
        )
        yield* expectFailure(
          routes.updateGatewayRoute({ path, payload: { provider_connection_id: theirs.connectionId } }),
          404,
          "provider_connection_not_found"
        )
        yield* expectFailure(
          other.api.gatewayRoutes.updateGatewayRoute({ path, payload: { display_name: "x" } }),
          404,
          "gateway_route_not_found"
        )
        // Another workspace's route cannot be used through the proxy either (called as its users call it).
        expectError(
          yield* call(base, "POST", `/v1/gateway/${mine.routeId}/chat_style/chat/completions`, {
            token: other.jwt,
            body: { model: "x", messages: [] }
          }),
          404,
          "gateway_route_not_found"
        )
        // Every route write is in the audit chain, attributed to its caller; refused ones are not.
        const audit = yield* owner.api.auditEvents.listAuditEvents({ urlParams: { resource_type: "route" } })
        expect(audit.audit_events.map((event) => [event.resource_id, event.action])).toEqual([
          [observed.id, "route.update"],
          [observed.id, "route.create"],
          [mine.routeId, "route.update"],
          [mine.routeId, "route.create"]
        ])
        for (const event of audit.audit_events) expect(event.actor).toEqual({ kind: "user", id: owner.user_id })
      })
    )
  })

  describe("LLM pricing", () => {
    it.effect("PUT normalizes the model, answers USD nanos as strings, updates in place; list and delete", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const other = yield* tenant(base)
        const put = (
          model: string,
          payload: { input_per_million_minor: number; output_per_million_minor: number },
          api = owner.api
        ) => api.llmPricing.putLlmPrice({ path: { model }, payload })

        const price = yield* put("  GPT-4o ", { input_per_million_minor: 250, output_per_million_minor: 1000 })
        expect(price).toEqual({
          model: "gpt-4o",
          currency: "usd",
          input_per_million_minor: 250,
          output_per_million_minor: 1000,
          input_per_million_usd_nanos: "2500000000",
          output_per_million_usd_nanos: "10000000000",
          source: "workspace"
        })
        yield* put("gpt-4o", { input_per_million_minor: 300, output_per_million_minor: 0 })
        yield* put("claude-sonnet", { input_per_million_minor: 300, output_per_million_minor: 1500 })
        const listed = (yield* owner.api.llmPricing.listLlmPrices({})).prices
        expect(listed.map((p) => [p.model, p.input_per_million_minor])).toEqual([
          ["claude-sonnet", 300],
          ["gpt-4o", 300]
        ])
        expect(yield* other.api.llmPricing.listLlmPrices({})).toEqual({ prices: [] })

        const [, deleted] = yield* owner.api.llmPricing.deleteLlmPrice({
          path: { model: " GPT-4O" },
          withResponse: true
        })
        expect(deleted.status).toBe(204)
        yield* expectFailure(owner.api.llmPricing.deleteLlmPrice({ path: { model: "gpt-4o" } }), 404, "price_not_found")
        yield* expectFailure(
          other.api.llmPricing.deleteLlmPrice({ path: { model: "claude-sonnet" } }),
          404,
          "price_not_found"
        )
      })
    )

    it.effect(
      "negative, fractional or missing prices and blank models are 400; runtime keys read but do not write",
      () =>
        Effect.gen(function* () {
          const base = yield* baseUrl
          const owner = yield* tenant(base)
          const key = yield* keyClient(base, yield* createKey(owner))
          // Prices the schema refuses: the typed client cannot send them.
          const putRaw = (body: unknown) => call(base, "PUT", "/v1/llm-pricing/m", { token: owner.jwt, body })
          expectValidation(
            yield* putRaw({ input_per_million_minor: -1, output_per_million_minor: 5 }),
            "input_per_million_minor"
          )
          expectValidation(
            yield* putRaw({ input_per_million_minor: 1, output_per_million_minor: -5 }),
            "output_per_million_minor"
          )
          expectValidation(
            yield* putRaw({ input_per_million_minor: 1.5, output_per_million_minor: 5 }),
            "input_per_million_minor"
          )
          expectValidation(yield* putRaw({ input_per_million_minor: 1 }), "output_per_million_minor")
          const valid = { input_per_million_minor: 1, output_per_million_minor: 1 }
          yield* expectInvalid(owner.api.llmPricing.putLlmPrice({ path: { model: "   " }, payload: valid }), "model")
          yield* expectFailure(key.llmPricing.putLlmPrice({ path: { model: "m" }, payload: valid }), 403)
          yield* key.llmPricing.listLlmPrices({})
          expect((yield* owner.api.llmPricing.listLlmPrices({})).prices).toEqual([])
        })
    )
  })
})
