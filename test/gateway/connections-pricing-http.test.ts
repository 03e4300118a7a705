/**
 * Provider connections, routes and LLM prices over HTTP: the provider key is
 * write-only and encrypted at rest (a service with another key reports it
 * `unreadable` and will not proxy with it), base URLs are https or
 * allowlisted http, routes need a connection of the same workspace, prices
 * are normalized and never negative, and each workspace sees only its own.
 */
import { describe, expect, layer } from "@effect/vitest"
import { HttpServer } from "@effect/platform"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import {
  call,
  createKey,
  expectError,
  expectStatus,
  expectValidation,
  queryDatabase,
  SERVER_OPTIONS,
  tenant,
  TIMESTAMP
} from "../identity/http-helpers.js"
import { baseUrl, TestDatabaseUrl, testServerOver, testServerWithDatabase } from "../support/TestServer.js"
import { GATEWAY_SETTINGS, PROVIDER_KEY, setupGateway } from "./gateway-helpers.js"

const CONNECTION_KEYS = ["base_url", "created_at", "credential_status", "default_model", "display_name", "id", "kind", "updated_at"]

layer(testServerWithDatabase("database", GATEWAY_SETTINGS), SERVER_OPTIONS)("gateway configuration", (it) => {
  describe("provider connections", () => {
    it.effect("create answers 201 without the key, which is stored encrypted and never listed", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const db = yield* TestDatabaseUrl
        const owner = yield* tenant(base)
        const response = yield* call(base, "POST", "/v1/gateway/provider-connections", {
          token: owner.jwt,
          body: { display_name: "OpenAI", kind: "chat_compatible", provider_api_key: PROVIDER_KEY, default_model: "gpt-4o" }
        })
        const created = expectStatus(response, 201)
        expect(Object.keys(created).sort()).toEqual(CONNECTION_KEYS)
        expect(created).toMatchObject({
          display_name: "OpenAI",
          kind: "chat_compatible",
          base_url: "https://api.openai.com/v1",
          default_model: "gpt-4o",
          credential_status: "configured"
        })
        expect(created.created_at).toMatch(TIMESTAMP)
        expect(response.text).not.toContain(PROVIDER_KEY)

        const anthropic = expectStatus(
          yield* call(base, "POST", "/v1/gateway/provider-connections", {
            token: owner.jwt,
            body: { display_name: "Claude", kind: "messages_compatible", provider_api_key: "sk-ant-x" }
          }),
          201
        )
        expect(anthropic.base_url).toBe("https://api.anthropic.com")

        const listed = yield* call(base, "GET", "/v1/gateway/provider-connections", { token: owner.jwt })
        expect(expectStatus(listed, 200).provider_connections.map((c: { id: string }) => c.id)).toEqual([anthropic.id, created.id])
        expect(listed.text).not.toContain(PROVIDER_KEY)

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
        const create = (body: Record<string, unknown>) =>
          call(base, "POST", "/v1/gateway/provider-connections", {
            token: owner.jwt,
            body: { display_name: "x", kind: "chat_compatible", provider_api_key: "k", ...body }
          })
        expectValidation(yield* create({ base_url: "http://example.com/v1" }), "base_url")
        expectValidation(yield* create({ base_url: "ftp://example.com" }), "base_url")
        expectValidation(yield* create({ base_url: "not a url" }), "base_url")
        expectValidation(yield* create({ base_url: "https://user:pw@example.com" }), "base_url")
        expectValidation(yield* create({ kind: "smoke_signals" }), "kind")
        expectValidation(yield* create({ provider_api_key: "" }), "provider_api_key")
        expect(expectStatus(yield* create({ base_url: "http://127.0.0.1:9/v1/" }), 201).base_url).toBe("http://127.0.0.1:9/v1")
        expect(expectStatus(yield* create({ base_url: "https://llm.example.com/openai" }), 201).base_url).toBe(
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
        const path = `/v1/gateway/provider-connections/${gateway.connectionId}`
        const stored = () =>
          Effect.map(
            queryDatabase<{ encrypted_api_key: string }>(db, "select encrypted_api_key from provider_connections where id = $1", [
              gateway.connectionId
            ]),
            (rows) => rows[0]!.encrypted_api_key
          )
        const before = yield* stored()

        const renamed = expectStatus(yield* call(base, "PATCH", path, { token: owner.jwt, body: { display_name: "Renamed" } }), 200)
        expect(renamed).toMatchObject({ display_name: "Renamed", base_url: "http://127.0.0.1:9" })
        expect(yield* stored()).toBe(before)

        const rekeyed = yield* call(base, "PATCH", path, { token: owner.jwt, body: { provider_api_key: "sk-new-key-456" } })
        expect(expectStatus(rekeyed, 200).credential_status).toBe("configured")
        expect(rekeyed.text).not.toContain("sk-new-key-456")
        expect(yield* stored()).not.toBe(before)

        // A stored key never follows a new base_url: changing it takes the key for the new server (400 otherwise).
        expectValidation(yield* call(base, "PATCH", path, { token: owner.jwt, body: { base_url: null } }), "provider_api_key")
        expectValidation(
          yield* call(base, "PATCH", path, { token: owner.jwt, body: { base_url: "http://127.0.0.1:10/v1", display_name: "x" } }),
          "provider_api_key"
        )
        expect(expectStatus(yield* call(base, "GET", "/v1/gateway/provider-connections", { token: owner.jwt }), 200)).toMatchObject({
          provider_connections: [{ display_name: "Renamed", base_url: "http://127.0.0.1:9" }]
        })
        // The same base_url again is no change, so no key is needed.
        expectStatus(yield* call(base, "PATCH", path, { token: owner.jwt, body: { base_url: "http://127.0.0.1:9/" } }), 200)
        const reset = expectStatus(
          yield* call(base, "PATCH", path, { token: owner.jwt, body: { base_url: null, provider_api_key: "sk-for-openai" } }),
          200
        )
        expect(reset.base_url).toBe("https://api.openai.com/v1")
        expectValidation(yield* call(base, "PATCH", path, { token: owner.jwt, body: { base_url: "http://evil.example" } }), "base_url")

        expectError(yield* call(base, "PATCH", path, { token: other.jwt, body: { display_name: "mine" } }), 404, "provider_connection_not_found")
        expectError(
          yield* call(base, "PATCH", "/v1/gateway/provider-connections/pc_nope", { token: owner.jwt, body: { display_name: "x" } }),
          404
        )
        expect(expectStatus(yield* call(base, "GET", "/v1/gateway/provider-connections", { token: other.jwt }), 200)).toEqual({
          provider_connections: []
        })
      })
    )

    it.effect("runtime keys may not manage provider connections (403), may list routes and call the proxy", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const key = yield* createKey(base, owner)
        yield* setupGateway(base, owner, "http://127.0.0.1:9")
        expectError(yield* call(base, "GET", "/v1/gateway/provider-connections", { token: key.plaintext_key }), 403)
        expectError(
          yield* call(base, "POST", "/v1/gateway/provider-connections", {
            token: key.plaintext_key,
            body: { display_name: "x", kind: "chat_compatible", provider_api_key: "k" }
          }),
          403
        )
        expect(expectStatus(yield* call(base, "GET", "/v1/gateway/routes", { token: key.plaintext_key }), 200).gateway_routes).toHaveLength(1)
      })
    )

    it.effect("a service holding another encryption key reports the key unreadable and refuses to proxy with it (502)", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const db = yield* TestDatabaseUrl
        const owner = yield* tenant(base)
        const key = yield* createKey(base, owner)
        const gateway = yield* setupGateway(base, owner, "http://127.0.0.1:9")

        const scope = yield* Scope.make()
        const context = yield* Layer.buildWithScope(
          testServerOver("database", db, { ...GATEWAY_SETTINGS, GATEWAY_ENCRYPTION_KEY: "a-different-key-entirely-0123456789" }),
          scope
        )
        const address = Context.get(context, HttpServer.HttpServer).address
        const second = `http://127.0.0.1:${address._tag === "TcpAddress" ? address.port : 0}`
        const session = expectStatus(
          yield* call(second, "POST", "/v1/auth/login", { body: { username: owner.username, password: owner.password } }),
          200
        )
        const listed = expectStatus(yield* call(second, "GET", "/v1/gateway/provider-connections", { token: session.jwt }), 200)
        expect(listed.provider_connections[0].credential_status).toBe("unreadable")
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

        const routes = expectStatus(yield* call(base, "GET", "/v1/gateway/routes", { token: owner.jwt }), 200).gateway_routes
        expect(routes).toHaveLength(1)
        expect(Object.keys(routes[0]).sort()).toEqual([
          "agent_id",
          "created_at",
          "display_name",
          "id",
          "provider_connection_id",
          "updated_at"
        ])
        expect(routes[0]).toMatchObject({ id: mine.routeId, agent_id: "bot-a", provider_connection_id: mine.connectionId })

        const foreign = expectError(
          yield* call(base, "POST", "/v1/gateway/routes", {
            token: owner.jwt,
            body: { agent_id: "a", display_name: "d", provider_connection_id: theirs.connectionId }
          }),
          404,
          "provider_connection_not_found"
        )
        expect(foreign.details?.[0]?.path).toBe("provider_connection_id")
        expectValidation(
          yield* call(base, "POST", "/v1/gateway/routes", { token: owner.jwt, body: { agent_id: "a", display_name: "d" } }),
          "provider_connection_id"
        )

        const patched = expectStatus(
          yield* call(base, "PATCH", `/v1/gateway/routes/${mine.routeId}`, {
            token: owner.jwt,
            body: { display_name: "Renamed", agent_id: "bot-b" }
          }),
          200
        )
        expect(patched).toMatchObject({ display_name: "Renamed", agent_id: "bot-b", provider_connection_id: mine.connectionId })
        expectError(
          yield* call(base, "PATCH", `/v1/gateway/routes/${mine.routeId}`, {
            token: owner.jwt,
            body: { provider_connection_id: theirs.connectionId }
          }),
          404,
          "provider_connection_not_found"
        )
        expectError(
          yield* call(base, "PATCH", `/v1/gateway/routes/${mine.routeId}`, { token: other.jwt, body: { display_name: "x" } }),
          404,
          "gateway_route_not_found"
        )
        // Another workspace's route cannot be used through the proxy either.
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
        const put = (model: string, body: unknown, token = owner.jwt) =>
          call(base, "PUT", `/v1/llm-pricing/${encodeURIComponent(model)}`, { token, body })

        const price = expectStatus(yield* put("  GPT-4o ", { input_per_million_minor: 250, output_per_million_minor: 1000 }), 200)
        expect(price).toEqual({
          model: "gpt-4o",
          currency: "usd",
          input_per_million_minor: 250,
          output_per_million_minor: 1000,
          input_per_million_usd_nanos: "2500000000",
          output_per_million_usd_nanos: "10000000000",
          source: "workspace"
        })
        expectStatus(yield* put("gpt-4o", { input_per_million_minor: 300, output_per_million_minor: 0 }), 200)
        expectStatus(yield* put("claude-sonnet", { input_per_million_minor: 300, output_per_million_minor: 1500 }), 200)
        const listed = expectStatus(yield* call(base, "GET", "/v1/llm-pricing", { token: owner.jwt }), 200).prices
        expect(listed.map((p: { model: string; input_per_million_minor: number }) => [p.model, p.input_per_million_minor])).toEqual([
          ["claude-sonnet", 300],
          ["gpt-4o", 300]
        ])
        expect(expectStatus(yield* call(base, "GET", "/v1/llm-pricing", { token: other.jwt }), 200)).toEqual({ prices: [] })

        const deleted = yield* call(base, "DELETE", `/v1/llm-pricing/${encodeURIComponent(" GPT-4O")}`, { token: owner.jwt })
        expect(deleted.status, deleted.text).toBe(204)
        expectError(yield* call(base, "DELETE", "/v1/llm-pricing/gpt-4o", { token: owner.jwt }), 404, "price_not_found")
        expectError(yield* call(base, "DELETE", "/v1/llm-pricing/claude-sonnet", { token: other.jwt }), 404, "price_not_found")
      })
    )

    it.effect("negative, fractional or missing prices and blank models are 400; runtime keys read but do not write", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const key = yield* createKey(base, owner)
        const put = (model: string, body: unknown, token = owner.jwt) =>
          call(base, "PUT", `/v1/llm-pricing/${encodeURIComponent(model)}`, { token, body })
        expectValidation(yield* put("m", { input_per_million_minor: -1, output_per_million_minor: 5 }), "input_per_million_minor")
        expectValidation(yield* put("m", { input_per_million_minor: 1, output_per_million_minor: -5 }), "output_per_million_minor")
        expectValidation(yield* put("m", { input_per_million_minor: 1.5, output_per_million_minor: 5 }), "input_per_million_minor")
        expectValidation(yield* put("m", { input_per_million_minor: 1 }), "output_per_million_minor")
        expectValidation(yield* put("   ", { input_per_million_minor: 1, output_per_million_minor: 1 }), "model")
        expectError(yield* put("m", { input_per_million_minor: 1, output_per_million_minor: 1 }, key.plaintext_key), 403)
        expectStatus(yield* call(base, "GET", "/v1/llm-pricing", { token: key.plaintext_key }), 200)
        expect(expectStatus(yield* call(base, "GET", "/v1/llm-pricing", { token: owner.jwt }), 200).prices).toEqual([])
      })
    )
  })
})
