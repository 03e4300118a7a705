/**
 * Provider connections, routes and LLM prices over HTTP: the provider key is
 * write-only and encrypted at rest (a service with another key reports it
 * `unreadable` and will not proxy with it), base URLs are https or
 * allowlisted http, routes need a connection of the same workspace, prices
 * are normalized and never negative, and each workspace sees only its own.
 */
import { describe, expect, layer } from "@effect/vitest"
import { HttpServer } from "@effect/platform"
import { Context, Effect, Exit, Layer, Redacted, Scope } from "effect"
import { ProviderConnectionId } from "../../src/gateway/Domain.js"
import { queryDatabase } from "../support/Database.js"
import { TIMESTAMP } from "../support/Formats.js"
import { clientAt, expectFailure, expectInvalid, type GuardrailClient, keysOf, withRaw } from "../support/Api.js"
import { call, expectError, expectValidation } from "../support/Raw.js"
import { createKey, keyClient, tenant } from "../support/Tenants.js"
import {
  baseUrl,
  SERVER_OPTIONS,
  TestDatabaseUrl,
  testServerOver,
  testServerWithDatabase
} from "../support/TestServer.js"
import { GATEWAY_SETTINGS, PROVIDER_KEY, registerAgent, setupGateway } from "./gateway-helpers.js"

const CONNECTION_KEYS = [
  "base_url",
  "created_at",
  "credential_status",
  "default_model",
  "display_name",
  "id",
  "kind",
  "updated_at"
]

/** The keys of a JSON object as sent, sorted. */

type NewConnection = Parameters<GuardrailClient["providerConnections"]["createProviderConnection"]>[0]["payload"]

layer(testServerWithDatabase("database", GATEWAY_SETTINGS), SERVER_OPTIONS)("gateway configuration", (it) => {
  describe("provider connections", () => {
    it.effect("create answers 201 without the key, which is stored encrypted and never listed", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const db = yield* TestDatabaseUrl
        const owner = yield* tenant(base)
        const connections = owner.api.providerConnections
        const response = yield* withRaw(
          connections.createProviderConnection({
            payload: {
              display_name: "OpenAI",
              kind: "chat_compatible",
              provider_api_key: Redacted.make(PROVIDER_KEY),
              default_model: "gpt-4o"
            },
            withResponse: true
          })
        )
        const created = response.value
        expect(response.status).toBe(201)
        // The keys as sent: the client's decoding would drop any field the schema does not know.
        expect(keysOf(response.body)).toEqual(CONNECTION_KEYS)
        expect(created).toMatchObject({
          display_name: "OpenAI",
          kind: "chat_compatible",
          base_url: "https://api.openai.com/v1",
          default_model: "gpt-4o",
          credential_status: "configured"
        })
        expect(created.created_at).toMatch(TIMESTAMP)
        expect(response.text).not.toContain(PROVIDER_KEY)

        const anthropic = yield* connections.createProviderConnection({
          payload: { display_name: "Claude", kind: "messages_compatible", provider_api_key: Redacted.make("sk-ant-x") }
        })
        expect(anthropic.base_url).toBe("https://api.anthropic.com")

        const { text: listedText, value: listed } = yield* withRaw(
          connections.listProviderConnections({ withResponse: true })
        )
        expect(listed.provider_connections.map((connection) => connection.id)).toEqual([anthropic.id, created.id])
        expect(listedText).not.toContain(PROVIDER_KEY)

        const [row] = yield* queryDatabase<{ encrypted_api_key: string }>(
          db,
          "select encrypted_api_key from provider_connections where id = $1",
          [created.id]
        )
        expect(row!.encrypted_api_key).toMatch(/^v1:[A-Za-z0-9+/=]+$/)
        expect(row!.encrypted_api_key).not.toContain(PROVIDER_KEY)
        expect(Buffer.from(row!.encrypted_api_key.slice(3), "base64").toString("latin1")).not.toContain(PROVIDER_KEY)
      })
    )

    it.effect("base_url must be https, or http to an allowlisted host; kind must be known", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const create = (payload: Partial<NewConnection>) =>
          owner.api.providerConnections.createProviderConnection({
            payload: { display_name: "x", kind: "chat_compatible", provider_api_key: Redacted.make("k"), ...payload }
          })
        yield* expectInvalid(create({ base_url: "http://example.com/v1" }), "base_url")
        yield* expectInvalid(create({ base_url: "ftp://example.com" }), "base_url")
        yield* expectInvalid(create({ base_url: "not a url" }), "base_url")
        yield* expectInvalid(create({ base_url: "https://user:pw@example.com" }), "base_url")
        // An unknown kind and an empty key are refused by the schema: the typed client cannot send them.
        const createRaw = (body: Record<string, unknown>) =>
          call(base, "POST", "/v1/gateway/provider-connections", {
            token: owner.jwt,
            body: { display_name: "x", kind: "chat_compatible", provider_api_key: "k", ...body }
          })
        expectValidation(yield* createRaw({ kind: "smoke_signals" }), "kind")
        expectValidation(yield* createRaw({ provider_api_key: "" }), "provider_api_key")
        expect((yield* create({ base_url: "http://127.0.0.1:9/v1/" })).base_url).toBe("http://127.0.0.1:9/v1")
        expect((yield* create({ base_url: "https://llm.example.com/openai" })).base_url).toBe(
          "https://llm.example.com/openai"
        )
      })
    )

    it.effect("patch renames, replaces the key (re-encrypted), resets base_url with null; 404 elsewhere", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const db = yield* TestDatabaseUrl
        const owner = yield* tenant(base)
        const other = yield* tenant(base)
        const gateway = yield* setupGateway(base, owner, "http://127.0.0.1:9")
        const connections = owner.api.providerConnections
        const path = { id: gateway.connectionId }
        const update = (payload: Parameters<typeof connections.updateProviderConnection>[0]["payload"]) =>
          connections.updateProviderConnection({ path, payload })
        const stored = () =>
          Effect.map(
            queryDatabase<{ encrypted_api_key: string }>(
              db,
              "select encrypted_api_key from provider_connections where id = $1",
              [gateway.connectionId]
            ),
            (rows) => rows[0]!.encrypted_api_key
          )
        const before = yield* stored()

        const renamed = yield* update({ display_name: "Renamed" })
        expect(renamed).toMatchObject({ display_name: "Renamed", base_url: "http://127.0.0.1:9" })
        expect(yield* stored()).toBe(before)

        const { text: rekeyedText, value: rekeyed } = yield* withRaw(
          connections.updateProviderConnection({
            path,
            payload: { provider_api_key: Redacted.make("sk-new-key-456") },
            withResponse: true
          })
        )
        expect(rekeyed.credential_status).toBe("configured")
        expect(rekeyedText).not.toContain("sk-new-key-456")
        expect(yield* stored()).not.toBe(before)

        // A stored key never follows a new base_url: changing it takes the key for the new server (400 otherwise).
        yield* expectInvalid(update({ base_url: null }), "provider_api_key")
        yield* expectInvalid(update({ base_url: "http://127.0.0.1:10/v1", display_name: "x" }), "provider_api_key")
        expect(yield* connections.listProviderConnections({})).toMatchObject({
          provider_connections: [{ display_name: "Renamed", base_url: "http://127.0.0.1:9" }]
        })
        // The same base_url again is no change, so no key is needed.
        yield* update({ base_url: "http://127.0.0.1:9/" })
        const reset = yield* update({ base_url: null, provider_api_key: Redacted.make("sk-for-openai") })
        expect(reset.base_url).toBe("https://api.openai.com/v1")
        yield* expectInvalid(update({ base_url: "http://evil.example" }), "base_url")

        yield* expectFailure(
          other.api.providerConnections.updateProviderConnection({ path, payload: { display_name: "mine" } }),
          404,
          "provider_connection_not_found"
        )
        yield* expectFailure(
          connections.updateProviderConnection({
            path: { id: ProviderConnectionId.make("pc_nope") },
            payload: { display_name: "x" }
          }),
          404
        )
        expect(yield* other.api.providerConnections.listProviderConnections({})).toEqual({
          provider_connections: []
        })
      })
    )

    it.effect("runtime keys may not manage provider connections (403), may list routes and call the proxy", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const key = yield* keyClient(base, yield* createKey(owner))
        yield* setupGateway(base, owner, "http://127.0.0.1:9")
        yield* expectFailure(key.providerConnections.listProviderConnections({}), 403)
        yield* expectFailure(
          key.providerConnections.createProviderConnection({
            payload: { display_name: "x", kind: "chat_compatible", provider_api_key: Redacted.make("k") }
          }),
          403
        )
        expect((yield* key.gatewayRoutes.listGatewayRoutes({})).gateway_routes).toHaveLength(1)
      })
    )

    it.effect(
      "a service holding another encryption key reports the key unreadable and refuses to proxy with it (502)",
      () =>
        Effect.gen(function* () {
          const base = yield* baseUrl
          const db = yield* TestDatabaseUrl
          const owner = yield* tenant(base)
          const key = yield* createKey(owner)
          const gateway = yield* setupGateway(base, owner, "http://127.0.0.1:9")

          const scope = yield* Scope.make()
          const context = yield* Layer.buildWithScope(
            testServerOver("database", db, {
              ...GATEWAY_SETTINGS,
              GATEWAY_ENCRYPTION_KEY: "a-different-key-entirely-0123456789"
            }),
            scope
          )
          const address = Context.get(context, HttpServer.HttpServer).address
          const second = `http://127.0.0.1:${address._tag === "TcpAddress" ? address.port : 0}`
          const session = yield* (yield* clientAt(second)).auth.login({
            payload: { username: owner.username, password: owner.password }
          })
          const secondApi = yield* clientAt(second, { token: session.jwt })
          const listed = yield* secondApi.providerConnections.listProviderConnections({})
          expect(listed.provider_connections[0]!.credential_status).toBe("unreadable")
          // The proxy, as its users call it.
          expectError(
            yield* call(second, "POST", `/v1/gateway/${gateway.routeId}/chat_style/chat/completions`, {
              token: key.plaintext_key,
              body: { model: "x", messages: [] }
            }),
            502,
            "provider_credential_unreadable"
          )
          yield* Scope.close(scope, Exit.void)
        })
    )
  })

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
