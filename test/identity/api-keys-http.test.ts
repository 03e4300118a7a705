/**
 * Workspace runtime keys over HTTP against the real service and PostgreSQL:
 * create (plaintext once, stored as a hash), list, batch revoke, what a
 * runtime key may and may not call, and `last_used_at` written in batches.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { uniqueName } from "../support/TestPlatform.js"
import { baseUrl, TestDatabaseUrl, testServerWithDatabase } from "../support/TestServer.js"
import {
  call,
  createEnvironment,
  createKey,
  expectError,
  expectStatus,
  expectValidation,
  queryDatabase,
  SERVER_OPTIONS,
  sha256Hex,
  tenant,
  TIMESTAMP
} from "./http-helpers.js"

interface ApiKeyBody {
  readonly id: string
  readonly name: string
  readonly prefix: string
  readonly status: string
  readonly environment: string
  readonly environment_id: string
  readonly principal_id: string
  readonly created_by: string
  readonly created_at: string
  readonly last_used_at: string | null
}

const listKeys = (base: string, token: string, workspace?: string) =>
  Effect.map(call(base, "GET", "/v1/api-keys", { token, workspace }), (response) => {
    const body = expectStatus(response, 200) as { api_keys: Array<ApiKeyBody> }
    return { keys: body.api_keys, text: response.text }
  })

layer(testServerWithDatabase("database"), SERVER_OPTIONS)("API keys over HTTP", (it) => {
  // First, because it waits for the 10-second flush of last_used_at.
  it.effect(
    "last_used_at becomes non-null after the key is used (flushed within ~10 s)",
    () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const created = yield* createKey(base, owner)
        expect((yield* listKeys(base, owner.jwt)).keys[0]!.last_used_at).toBeNull()

        const usedFrom = Date.now()
        expectStatus(yield* call(base, "GET", "/v1/environments", { token: created.plaintext_key }), 200)

        const deadline = Date.now() + 15_000
        let lastUsed: string | null = null
        while (lastUsed === null && Date.now() < deadline) {
          yield* Effect.sleep("500 millis")
          const { keys } = yield* listKeys(base, owner.jwt)
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
        const response = yield* call(base, "POST", "/v1/api-keys", { token: owner.jwt, body: { name } })
        const created = expectStatus(response, 201) as { api_key: ApiKeyBody; plaintext_key: string }
        expect(Object.keys(created).sort()).toEqual(["api_key", "plaintext_key"])
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
        expect(JSON.stringify(key)).not.toContain(created.plaintext_key)
        // Every key is different.
        const another = yield* createKey(base, owner)
        expect(another.plaintext_key).not.toBe(created.plaintext_key)
        expect(another.api_key.id).not.toBe(key.id)
      })
    )

    it.effect("stores the key only as a hash", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const db = yield* TestDatabaseUrl
        const owner = yield* tenant(base)
        const created = yield* createKey(base, owner)
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
        const staging = yield* createEnvironment(base, owner, "staging")
        const created = yield* createKey(base, owner, { environment_id: staging.id })
        expect(created.api_key).toMatchObject({ environment_id: staging.id, environment: "staging" })
        const listed = (yield* listKeys(base, owner.jwt)).keys.find((key) => key.id === created.api_key.id)
        expect(listed).toMatchObject({ environment_id: staging.id, environment: "staging" })
      })
    )

    it.effect("an environment_id not in the workspace answers 404 and creates nothing", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const other = yield* tenant(base)
        for (const environment_id of ["env_does_not_exist", other.defaultEnvironmentId, ""]) {
          const response = yield* call(base, "POST", "/v1/api-keys", {
            token: owner.jwt,
            body: { name: "k", environment_id }
          })
          expectError(response, 404, "environment_not_found")
        }
        expect((yield* listKeys(base, owner.jwt)).keys).toEqual([])
      })
    )

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
        expect((yield* listKeys(base, owner.jwt)).keys).toEqual([])
      })
    )

    it.effect("without a credential answers 401", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        expectError(yield* call(base, "POST", "/v1/api-keys", { body: { name: "k" } }), 401)
        expectError(yield* call(base, "GET", "/v1/api-keys"), 401)
        expectError(yield* call(base, "PATCH", "/v1/api-keys/batch/revoke", { body: { ids: [] } }), 401)
      })
    )
  })

  describe("GET /v1/api-keys", () => {
    it.effect("lists the workspace's keys newest first, never with the plaintext", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const first = yield* createKey(base, owner)
        const second = yield* createKey(base, owner)
        const { keys, text } = yield* listKeys(base, owner.jwt)
        expect(keys.map((key) => key.id)).toEqual([second.api_key.id, first.api_key.id])
        for (const key of keys) {
          expect(key).not.toHaveProperty("plaintext_key")
          expect(key.prefix).toHaveLength(12)
        }
        expect(text).not.toContain(first.plaintext_key)
        expect(text).not.toContain(second.plaintext_key)
        expect(text).not.toContain(first.plaintext_key.slice(12))
      })
    )
  })

  describe("runtime keys as credentials", () => {
    it.effect("a runtime key reads its own workspace's environments", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const key = yield* createKey(base, owner)
        const response = yield* call(base, "GET", "/v1/environments", { token: key.plaintext_key })
        const body = expectStatus(response, 200)
        expect(body.environments.map((e: { id: string }) => e.id)).toEqual([owner.defaultEnvironmentId])
        expectStatus(
          yield* call(base, "GET", `/v1/environments/${owner.defaultEnvironmentId}/checker-modes`, {
            token: key.plaintext_key
          }),
          200
        )
      })
    )

    it.effect("a runtime key never manages API keys, team, provider connections, settings or environments (403)", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const key = yield* createKey(base, owner)
        const staging = yield* createEnvironment(base, owner)
        const token = key.plaintext_key
        const forbidden: ReadonlyArray<readonly [string, string, unknown?]> = [
          ["GET", "/v1/api-keys"],
          ["POST", "/v1/api-keys", { name: "from a key" }],
          ["PATCH", "/v1/api-keys/batch/revoke", { ids: [key.api_key.id] }],
          ["GET", "/v1/team/members"],
          ["POST", "/v1/team/invites", { email: "someone@example.com", role: "admin" }],
          ["POST", "/v1/team/my-workspaces", { name: "from a key" }],
          ["GET", "/v1/gateway/provider-connections"],
          ["POST", "/v1/gateway/provider-connections", { display_name: "x" }],
          ["GET", "/v1/settings"],
          ["PATCH", "/v1/settings", { default_action: "deny" }],
          ["POST", "/v1/environments", { name: "x", slug: "from-key" }],
          ["PATCH", `/v1/environments/${staging.id}`, { name: "renamed" }],
          ["DELETE", `/v1/environments/${staging.id}`],
          ["PUT", `/v1/environments/${staging.id}/checker-modes`, { approval_checker_mode: "enforce" }]
        ]
        for (const [method, path, body] of forbidden) {
          const response = yield* call(base, method, path, { token, body })
          expect(response.status, `${method} ${path}: ${response.text}`).toBe(403)
          expectError(response, 403, "forbidden_credential")
        }
        // Nothing changed: the key is active, the environment is there, settings untouched.
        const { keys } = yield* listKeys(base, owner.jwt)
        expect(keys.map((k) => k.status)).toEqual(["active"])
        const settings = expectStatus(yield* call(base, "GET", "/v1/settings", { token: owner.jwt }), 200)
        expect(settings.default_action).toBe("permit")
        const environments = expectStatus(yield* call(base, "GET", "/v1/environments", { token: owner.jwt }), 200)
        expect(environments.environments.map((e: { slug: string; name: string }) => e.slug)).toContain(staging.slug)
        expect(environments.environments.find((e: { id: string }) => e.id === staging.id).name).toBe(staging.name)
      })
    )

    it.effect("a runtime key ignores X-SERVICE-Workspace-Id: it only ever sees its own workspace", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const other = yield* tenant(base)
        const key = yield* createKey(base, owner)
        const response = yield* call(base, "GET", "/v1/environments", {
          token: key.plaintext_key,
          workspace: other.workspaceId
        })
        if (response.status === 200) {
          const ids = (response.body as { environments: Array<{ id: string }> }).environments.map((e) => e.id)
          expect(ids).not.toContain(other.defaultEnvironmentId)
          expect(ids).toEqual([owner.defaultEnvironmentId])
        } else {
          expectError(response, 404)
        }
      })
    )

    it.effect("an unknown gr_live_ key answers 401 invalid_api_key", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        for (const token of [`gr_live_${"x".repeat(43)}`, "gr_live_", `gr_live_${sha256Hex("nope")}`]) {
          expectError(yield* call(base, "GET", "/v1/environments", { token }), 401)
        }
      })
    )
  })

  describe("PATCH /v1/api-keys/batch/revoke", () => {
    it.effect("revokes the keys: status revoked in the answer and the list, and the key answers 401 at once", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const doomed = yield* createKey(base, owner)
        const alsoDoomed = yield* createKey(base, owner)
        const kept = yield* createKey(base, owner)
        // Warm the key cache: the revoke must not be hidden by it.
        expectStatus(yield* call(base, "GET", "/v1/environments", { token: doomed.plaintext_key }), 200)

        const response = yield* call(base, "PATCH", "/v1/api-keys/batch/revoke", {
          token: owner.jwt,
          body: { ids: [doomed.api_key.id, alsoDoomed.api_key.id, doomed.api_key.id] }
        })
        const body = expectStatus(response, 200) as { api_keys: Array<ApiKeyBody> }
        expect(body.api_keys.map((key) => key.id).sort()).toEqual([doomed.api_key.id, alsoDoomed.api_key.id].sort())
        for (const key of body.api_keys) expect(key.status).toBe("revoked")
        expect(response.text).not.toContain(doomed.plaintext_key)

        for (const token of [doomed.plaintext_key, alsoDoomed.plaintext_key]) {
          expectError(yield* call(base, "GET", "/v1/environments", { token }), 401, "invalid_api_key")
        }
        expectStatus(yield* call(base, "GET", "/v1/environments", { token: kept.plaintext_key }), 200)

        const statuses = Object.fromEntries((yield* listKeys(base, owner.jwt)).keys.map((key) => [key.id, key.status]))
        expect(statuses).toEqual({
          [doomed.api_key.id]: "revoked",
          [alsoDoomed.api_key.id]: "revoked",
          [kept.api_key.id]: "active"
        })

        // Revoking again is harmless.
        const again = expectStatus(
          yield* call(base, "PATCH", "/v1/api-keys/batch/revoke", {
            token: owner.jwt,
            body: { ids: [doomed.api_key.id] }
          }),
          200
        )
        expect(again.api_keys.map((key: ApiKeyBody) => key.status)).toEqual(["revoked"])
        // Still refused a while later (no cache brings it back).
        yield* Effect.sleep("100 millis")
        expectError(yield* call(base, "GET", "/v1/environments", { token: doomed.plaintext_key }), 401)
      })
    )

    it.effect("an unknown id answers 404 and revokes nothing", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const key = yield* createKey(base, owner)
        const response = yield* call(base, "PATCH", "/v1/api-keys/batch/revoke", {
          token: owner.jwt,
          body: { ids: [key.api_key.id, "key_does_not_exist"] }
        })
        const error = expectError(response, 404, "api_key_not_found")
        expect(error.message).toContain("key_does_not_exist")
        expect((yield* listKeys(base, owner.jwt)).keys.map((k) => k.status)).toEqual(["active"])
        expectStatus(yield* call(base, "GET", "/v1/environments", { token: key.plaintext_key }), 200)
      })
    )

    it.effect("an empty list answers 200 with no keys", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const body = expectStatus(
          yield* call(base, "PATCH", "/v1/api-keys/batch/revoke", { token: owner.jwt, body: { ids: [] } }),
          200
        )
        expect(body).toEqual({ api_keys: [] })
      })
    )

    it.effect("a body without an ids array of strings answers 400 naming ids; a wrong content type 415", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const path = "/v1/api-keys/batch/revoke"
        expectValidation(yield* call(base, "PATCH", path, { token: owner.jwt, body: {} }), "ids")
        expectValidation(yield* call(base, "PATCH", path, { token: owner.jwt, body: { ids: "key_1" } }), "ids")
        expectValidation(yield* call(base, "PATCH", path, { token: owner.jwt, body: { ids: [1] } }), "ids.0")
        expectError(yield* call(base, "PATCH", path, { token: owner.jwt, raw: "[" }), 400, "malformed_json")
        expectError(
          yield* call(base, "PATCH", path, {
            token: owner.jwt,
            raw: JSON.stringify({ ids: [] }),
            contentType: "text/plain"
          }),
          415,
          "unsupported_media_type"
        )
      })
    )
  })

  describe("large batches", () => {
    it.effect("a revoke naming 70,000 ids answers a 4xx (too many, or not found), not 500", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const key = yield* createKey(base, owner)
        const ids = [key.api_key.id, ...Array.from({ length: 70_000 }, (_, i) => `key_${i}`)]
        const response = yield* call(base, "PATCH", "/v1/api-keys/batch/revoke", { token: owner.jwt, body: { ids } })
        expect([400, 404], response.text.slice(0, 300)).toContain(response.status)
        expectError(response, response.status)
        expect((yield* listKeys(base, owner.jwt)).keys.map((k) => k.status)).toEqual(["active"])
      })
    )
  })

  describe("keys and environments", () => {
    it.effect("an environment with an active key cannot be deleted (409); after the revoke it can (204)", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const staging = yield* createEnvironment(base, owner)
        const key = yield* createKey(base, owner, { environment_id: staging.id })
        expectError(
          yield* call(base, "DELETE", `/v1/environments/${staging.id}`, { token: owner.jwt }),
          409,
          "environment_in_use"
        )
        expectStatus(
          yield* call(base, "PATCH", "/v1/api-keys/batch/revoke", {
            token: owner.jwt,
            body: { ids: [key.api_key.id] }
          }),
          200
        )
        const deleted = yield* call(base, "DELETE", `/v1/environments/${staging.id}`, { token: owner.jwt })
        expect(deleted.status, deleted.text).toBe(204)
        expect(deleted.text).toBe("")
        const environments = expectStatus(yield* call(base, "GET", "/v1/environments", { token: owner.jwt }), 200)
        expect(environments.environments.map((e: { id: string }) => e.id)).not.toContain(staging.id)
        // The key list still answers (the revoked key may stay listed or go, but no error).
        expectStatus(yield* call(base, "GET", "/v1/api-keys", { token: owner.jwt }), 200)
      })
    )
  })
})
