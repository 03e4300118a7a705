/**
 * Provider connections over HTTP: the provider key is write-only and
 * encrypted at rest (a service with another key reports it `unreadable` and
 * will not proxy with it), base URLs are https or allowlisted http, runtime
 * keys may not manage connections, and each workspace sees only its own.
 * Gateway routes and LLM prices are in gateway-routes-pricing-http.test.ts.
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
import { GATEWAY_SETTINGS, PROVIDER_KEY, setupGateway } from "./gateway-helpers.js"

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

    it.effect("a key that cannot go in a header (a line break, a space, non-ASCII) is 400 naming it", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const gateway = yield* setupGateway(base, owner, "http://127.0.0.1:9")
        // Before, each was stored (201) and every call through the route then failed 502 upstream_unreachable:
        // Node refuses such a header value before anything is sent. A key pasted from a file ends in a newline.
        for (const key of ["sk-pasted-from-a-file\n", "sk with spaces", "sk-caf\u00e9", "sk-\u0000"]) {
          const created = yield* call(base, "POST", "/v1/gateway/provider-connections", {
            token: owner.jwt,
            body: { display_name: "x", kind: "chat_compatible", provider_api_key: key }
          })
          expectValidation(created, "provider_api_key")
          const patched = yield* call(base, "PATCH", `/v1/gateway/provider-connections/${gateway.connectionId}`, {
            token: owner.jwt,
            body: { provider_api_key: key }
          })
          expectValidation(patched, "provider_api_key")
        }
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
})
