/**
 * Workspace runtime keys over HTTP against the real service and PostgreSQL:
 * what a runtime key may and may not call, batch revoke (large batches too),
 * and an environment with an active key. Create, list and `last_used_at` are
 * in api-keys-create-list-http.test.ts.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { clientAt, expectFailure, withRaw } from "../support/Api.js"
import { call, expectError, expectValidation } from "../support/Raw.js"
import { createEnvironment, createKey, keyClient, sha256Hex, tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServerWithDatabase } from "../support/TestServer.js"
import { answerOf, describeAnswer } from "./http-helpers.js"
import { listKeys } from "./api-keys-support.js"

layer(testServerWithDatabase("database"), SERVER_OPTIONS)("API keys over HTTP", (it) => {
  describe("runtime keys as credentials", () => {
    it.effect("a runtime key reads its own workspace's environments", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const key = yield* keyClient(base, yield* createKey(owner))
        const { environments } = yield* key.environments.listEnvironments({})
        expect(environments.map((e) => e.id)).toEqual([owner.defaultEnvironmentId])
        yield* key.environments.getCheckerModes({ path: { environment_id: owner.defaultEnvironmentId } })
      })
    )

    it.effect("a runtime key never manages API keys, team, provider connections, settings or environments (403)", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const created = yield* createKey(owner)
        const staging = yield* createEnvironment(owner)
        const key = yield* keyClient(base, created)
        const forbidden: ReadonlyArray<readonly [string, Effect.Effect<unknown, unknown>]> = [
          ["GET /v1/api-keys", key.apiKeys.listApiKeys({})],
          ["POST /v1/api-keys", key.apiKeys.createApiKey({ payload: { name: "from a key" } })],
          ["PATCH /v1/api-keys/batch/revoke", key.apiKeys.revokeApiKeys({ payload: { ids: [created.api_key.id] } })],
          ["GET /v1/team/members", key.team.listMembers({ urlParams: {} })],
          [
            "POST /v1/team/invites",
            key.team.createInvite({ payload: { email: "someone@example.com", role: "admin" } })
          ],
          ["POST /v1/team/my-workspaces", key.team.createWorkspace({ payload: { name: "from a key" } })],
          ["GET /v1/gateway/provider-connections", key.providerConnections.listProviderConnections({})],
          [
            "POST /v1/gateway/provider-connections",
            key.providerConnections.createProviderConnection({
              payload: { display_name: "x", kind: "chat_compatible", provider_api_key: Redacted.make("sk-test") }
            })
          ],
          ["GET /v1/settings", key.settings.getSettings({})],
          ["PATCH /v1/settings", key.settings.updateSettings({ payload: { default_action: "deny" } })],
          ["POST /v1/environments", key.environments.createEnvironment({ payload: { name: "x", slug: "from-key" } })],
          [
            "PATCH /v1/environments/{id}",
            key.environments.updateEnvironment({ path: { id: staging.id }, payload: { name: "renamed" } })
          ],
          ["DELETE /v1/environments/{id}", key.environments.deleteEnvironment({ path: { id: staging.id } })],
          [
            "PUT /v1/environments/{id}/checker-modes",
            key.environments.replaceCheckerModes({
              path: { environment_id: staging.id },
              payload: { approval_checker_mode: "enforce" }
            })
          ]
        ]
        for (const [label, attempt] of forbidden) {
          const answer = yield* answerOf(attempt, 200)
          expect(answer.status, `${label}: ${describeAnswer(answer)}`).toBe(403)
          expect(answer.error?.code).toBe("forbidden_credential")
        }
        // Nothing changed: the key is active, the environment is there, settings untouched.
        const { keys } = yield* listKeys(owner)
        expect(keys.map((k) => k.status)).toEqual(["active"])
        const settings = yield* owner.api.settings.getSettings({})
        expect(settings.default_action).toBe("permit")
        const { environments } = yield* owner.api.environments.listEnvironments({})
        expect(environments.map((e) => e.slug)).toContain(staging.slug)
        expect(environments.find((e) => e.id === staging.id)!.name).toBe(staging.name)
      })
    )

    it.effect("a runtime key ignores X-SERVICE-Workspace-Id: it only ever sees its own workspace", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const other = yield* tenant(base)
        const key = yield* createKey(owner)
        const elsewhere = yield* clientAt(base, { token: key.plaintext_key, workspace: other.workspaceId })
        const answer = yield* answerOf(elsewhere.environments.listEnvironments({}), 200)
        if (answer.value !== undefined) {
          const ids = answer.value.environments.map((e) => e.id)
          expect(ids).not.toContain(other.defaultEnvironmentId)
          expect(ids).toEqual([owner.defaultEnvironmentId])
        } else {
          expect(answer.status, describeAnswer(answer)).toBe(404)
        }
      })
    )

    it.effect("an unknown gr_live_ key answers 401 invalid_api_key", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        for (const token of [`gr_live_${"x".repeat(43)}`, "gr_live_", `gr_live_${sha256Hex("nope")}`]) {
          yield* expectFailure((yield* clientAt(base, { token })).environments.listEnvironments({}), 401)
        }
      })
    )
  })

  describe("PATCH /v1/api-keys/batch/revoke", () => {
    it.effect("revokes the keys: status revoked in the answer and the list, and the key answers 401 at once", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const doomed = yield* createKey(owner)
        const alsoDoomed = yield* createKey(owner)
        const kept = yield* createKey(owner)
        // Warm the key cache: the revoke must not be hidden by it.
        yield* (yield* keyClient(base, doomed)).environments.listEnvironments({})

        const { text, value: revoked } = yield* withRaw(
          owner.api.apiKeys.revokeApiKeys({
            payload: { ids: [doomed.api_key.id, alsoDoomed.api_key.id, doomed.api_key.id] },
            withResponse: true
          })
        )
        expect(revoked.api_keys.map((key) => key.id).sort()).toEqual([doomed.api_key.id, alsoDoomed.api_key.id].sort())
        for (const key of revoked.api_keys) expect(key.status).toBe("revoked")
        expect(text).not.toContain(doomed.plaintext_key)

        for (const key of [doomed, alsoDoomed]) {
          yield* expectFailure((yield* keyClient(base, key)).environments.listEnvironments({}), 401, "invalid_api_key")
        }
        yield* (yield* keyClient(base, kept)).environments.listEnvironments({})

        const statuses = Object.fromEntries((yield* listKeys(owner)).keys.map((key) => [key.id, key.status]))
        expect(statuses).toEqual({
          [doomed.api_key.id]: "revoked",
          [alsoDoomed.api_key.id]: "revoked",
          [kept.api_key.id]: "active"
        })

        // Revoking again is harmless.
        const again = yield* owner.api.apiKeys.revokeApiKeys({ payload: { ids: [doomed.api_key.id] } })
        expect(again.api_keys.map((key) => key.status)).toEqual(["revoked"])
        // Still refused a while later (no cache brings it back).
        yield* Effect.sleep("100 millis")
        yield* expectFailure((yield* keyClient(base, doomed)).environments.listEnvironments({}), 401)
      })
    )

    it.effect("an unknown id answers 404 and revokes nothing", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const key = yield* createKey(owner)
        const error = yield* expectFailure(
          owner.api.apiKeys.revokeApiKeys({ payload: { ids: [key.api_key.id, "key_does_not_exist"] } }),
          404,
          "api_key_not_found"
        )
        expect(error.message).toContain("key_does_not_exist")
        expect((yield* listKeys(owner)).keys.map((k) => k.status)).toEqual(["active"])
        yield* (yield* keyClient(base, key)).environments.listEnvironments({})
      })
    )

    it.effect("an empty list answers 200 with no keys", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const { body } = yield* withRaw(owner.api.apiKeys.revokeApiKeys({ payload: { ids: [] }, withResponse: true }))
        expect(body).toEqual({ api_keys: [] })
      })
    )

    // Raw: bodies the schema refuses, malformed JSON and a wrong media type.
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
    // Raw: 70,000 ids are above the contract's 1,000, so the client would not send them.
    it.effect("a revoke naming 70,000 ids answers a 4xx (too many, or not found), not 500", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const key = yield* createKey(owner)
        const ids = [key.api_key.id, ...Array.from({ length: 70_000 }, (_, i) => `key_${i}`)]
        const response = yield* call(base, "PATCH", "/v1/api-keys/batch/revoke", { token: owner.jwt, body: { ids } })
        expect([400, 404], response.text.slice(0, 300)).toContain(response.status)
        expectError(response, response.status)
        expect((yield* listKeys(owner)).keys.map((k) => k.status)).toEqual(["active"])
      })
    )
  })

  describe("keys and environments", () => {
    it.effect("an environment with an active key cannot be deleted (409); after the revoke it can (204)", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const staging = yield* createEnvironment(owner)
        const key = yield* createKey(owner, { environment_id: staging.id })
        yield* expectFailure(
          owner.api.environments.deleteEnvironment({ path: { id: staging.id } }),
          409,
          "environment_in_use"
        )
        yield* owner.api.apiKeys.revokeApiKeys({ payload: { ids: [key.api_key.id] } })
        const deleted = yield* withRaw(
          owner.api.environments.deleteEnvironment({ path: { id: staging.id }, withResponse: true })
        )
        expect(deleted.status, deleted.text).toBe(204)
        expect(deleted.text).toBe("")
        const { environments } = yield* owner.api.environments.listEnvironments({})
        expect(environments.map((e) => e.id)).not.toContain(staging.id)
        // The key list still answers (the revoked key may stay listed or go, but no error).
        yield* owner.api.apiKeys.listApiKeys({})
      })
    )
  })
})
