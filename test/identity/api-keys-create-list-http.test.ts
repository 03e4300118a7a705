/**
 * Workspace runtime keys over HTTP against the real service and PostgreSQL:
 * create (plaintext once, stored as a hash), list, and `last_used_at` written
 * in batches. What a runtime key may and may not call, batch revoke, and keys
 * and environments are in api-keys-credentials-revoke-http.test.ts.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { clientAt, expectFailure, withRaw } from "../support/Api.js"
import { call, expectError, expectValidation } from "../support/Raw.js"
import { createEnvironment, createKey, keyClient, tenant } from "../support/Tenants.js"
import { uniqueName } from "../support/TestPlatform.js"
import { baseUrl, SERVER_OPTIONS, TestDatabaseUrl, testServerWithDatabase } from "../support/TestServer.js"
import { queryDatabase } from "../support/Database.js"
import { TIMESTAMP } from "../support/Formats.js"
import { listKeys } from "./api-keys-support.js"

layer(testServerWithDatabase("database"), SERVER_OPTIONS)("API keys over HTTP", (it) => {
  // First, because it waits for the 10-second flush of last_used_at.
  it.effect(
    "last_used_at becomes non-null after the key is used (flushed within ~10 s)",
    () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const created = yield* createKey(owner)
        expect((yield* listKeys(owner)).keys[0]!.last_used_at).toBeNull()

        const usedFrom = Date.now()
        yield* (yield* keyClient(base, created)).environments.listEnvironments({})

        const deadline = Date.now() + 15_000
        let lastUsed: string | null = null
        while (lastUsed === null && Date.now() < deadline) {
          yield* Effect.sleep("500 millis")
          const { keys } = yield* listKeys(owner)
          lastUsed = keys.find((key) => key.id === created.api_key.id)!.last_used_at
        }
        expect(lastUsed, "last_used_at still null after 15 s").not.toBeNull()
        expect(lastUsed).toMatch(TIMESTAMP)
        expect(Date.parse(lastUsed!)).toBeGreaterThanOrEqual(usedFrom - 1_000)
        expect(Date.parse(lastUsed!)).toBeLessThanOrEqual(Date.now())
      }),
    30_000
  )

  describe("POST /v1/api-keys", () => {
    it.effect("answers 201 with the key and its plaintext once; bound to the default environment", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const name = uniqueName("ci key")
        const {
          body,
          status,
          value: created
        } = yield* withRaw(owner.api.apiKeys.createApiKey({ payload: { name }, withResponse: true }))
        expect(status).toBe(201)
        // The body as sent: decoding would drop any field the contract does not name.
        expect(Object.keys(body as object).sort()).toEqual(["api_key", "plaintext_key", "workspace_id"])
        // gr_live_ and at least 32 random bytes (43 base64url characters).
        expect(created.plaintext_key).toMatch(/^gr_live_[A-Za-z0-9_-]{43,}$/)
        const key = created.api_key
        expect(key).toMatchObject({
          name,
          status: "active",
          prefix: created.plaintext_key.slice(0, 12),
          environment: "production",
          environment_id: owner.defaultEnvironmentId,
          created_by: owner.user_id,
          last_used_at: null
        })
        expect(key.prefix.startsWith("gr_live_")).toBe(true)
        expect(typeof key.id).toBe("string")
        expect(typeof key.principal_id).toBe("string")
        expect(key.created_at).toMatch(TIMESTAMP)
        expect(JSON.stringify((body as { api_key: unknown }).api_key)).not.toContain(created.plaintext_key)
        // Every key is different.
        const another = yield* createKey(owner)
        expect(another.plaintext_key).not.toBe(created.plaintext_key)
        expect(another.api_key.id).not.toBe(key.id)
      })
    )

    it.effect("stores the key only as a hash", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const db = yield* TestDatabaseUrl
        const owner = yield* tenant(base)
        const created = yield* createKey(owner)
        const rows = yield* queryDatabase<{ row: string; key_hash: string; prefix: string }>(
          db,
          "select row_to_json(k)::text as row, key_hash, prefix from api_keys k where id = $1",
          [created.api_key.id]
        )
        expect(rows).toHaveLength(1)
        const secret = created.plaintext_key.slice(12)
        expect(rows[0]!.row).not.toContain(created.plaintext_key)
        expect(rows[0]!.row).not.toContain(secret)
        expect(rows[0]!.key_hash).not.toBe(created.plaintext_key)
        expect(rows[0]!.prefix).toBe(created.plaintext_key.slice(0, 12))
        // Not anywhere else in the database either.
        const dump = yield* queryDatabase<{ hit: string }>(
          db,
          `select table_name as hit from information_schema.tables t
           where table_schema = 'public'
             and exists (select 1 from information_schema.columns c where c.table_name = t.table_name)`
        )
        for (const { hit: table } of dump) {
          const found = yield* queryDatabase<{ n: string }>(
            db,
            `select count(*)::text as n from "${table}" x where row_to_json(x)::text like $1`,
            [`%${secret}%`]
          )
          expect(found[0]!.n, `plaintext found in table ${table}`).toBe("0")
        }
      })
    )

    it.effect("environment_id binds the key to that environment of the workspace", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const staging = yield* createEnvironment(owner, "staging")
        const created = yield* createKey(owner, { environment_id: staging.id })
        expect(created.api_key).toMatchObject({ environment_id: staging.id, environment: "staging" })
        const listed = (yield* listKeys(owner)).keys.find((key) => key.id === created.api_key.id)
        expect(listed).toMatchObject({ environment_id: staging.id, environment: "staging" })
      })
    )

    it.effect("an environment_id not in the workspace answers 404 and creates nothing", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const other = yield* tenant(base)
        for (const environment_id of ["env_does_not_exist", other.defaultEnvironmentId, ""]) {
          yield* expectFailure(
            owner.api.apiKeys.createApiKey({ payload: { name: "k", environment_id } }),
            404,
            "environment_not_found"
          )
        }
        expect((yield* listKeys(owner)).keys).toEqual([])
      })
    )

    // Raw: bodies the schema refuses, malformed JSON and a wrong media type.
    it.effect("a missing, empty or non-string name, or a non-string environment_id, answers 400 naming it", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        expectValidation(yield* call(base, "POST", "/v1/api-keys", { token: owner.jwt, body: {} }), "name")
        expectValidation(yield* call(base, "POST", "/v1/api-keys", { token: owner.jwt, body: { name: "" } }), "name")
        expectValidation(yield* call(base, "POST", "/v1/api-keys", { token: owner.jwt, body: { name: 5 } }), "name")
        expectValidation(
          yield* call(base, "POST", "/v1/api-keys", { token: owner.jwt, body: { name: "k", environment_id: 5 } }),
          "environment_id"
        )
        expectError(yield* call(base, "POST", "/v1/api-keys", { token: owner.jwt, raw: "{" }), 400, "malformed_json")
        expectError(
          yield* call(base, "POST", "/v1/api-keys", {
            token: owner.jwt,
            raw: JSON.stringify({ name: "k" }),
            contentType: "text/plain"
          }),
          415,
          "unsupported_media_type"
        )
        expect((yield* listKeys(owner)).keys).toEqual([])
      })
    )

    it.effect("without a credential answers 401", () =>
      Effect.gen(function* () {
        const anonymous = yield* clientAt(yield* baseUrl)
        yield* expectFailure(anonymous.apiKeys.createApiKey({ payload: { name: "k" } }), 401)
        yield* expectFailure(anonymous.apiKeys.listApiKeys({}), 401)
        yield* expectFailure(anonymous.apiKeys.revokeApiKeys({ payload: { ids: [] } }), 401)
      })
    )
  })

  describe("GET /v1/api-keys", () => {
    it.effect("lists the workspace's keys newest first, never with the plaintext", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const first = yield* createKey(owner)
        const second = yield* createKey(owner)
        const { body, keys, text } = yield* listKeys(owner)
        expect(keys.map((key) => key.id)).toEqual([second.api_key.id, first.api_key.id])
        for (const key of keys) expect(key.prefix).toHaveLength(12)
        // The keys as sent: decoding would drop a plaintext_key field.
        for (const key of (body as { api_keys: ReadonlyArray<object> }).api_keys) {
          expect(key).not.toHaveProperty("plaintext_key")
        }
        expect(text).not.toContain(first.plaintext_key)
        expect(text).not.toContain(second.plaintext_key)
        expect(text).not.toContain(first.plaintext_key.slice(12))
      })
    )
  })
})
