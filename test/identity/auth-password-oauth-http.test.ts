/**
 * Auth over HTTP against the real service and PostgreSQL: password change
 * (older sessions stop working), and the internal OAuth session exchange
 * (with the internal key, and on a server without one). Signup and login
 * are in auth-signup-login-http.test.ts; session credentials in
 * auth-sessions-http.test.ts.
 *
 * Login throttling has its own file (login-throttle.test.ts): here the
 * failure limit is raised (auth-support.ts) so the few deliberate failures
 * of this file can never throttle another test (all of them come from
 * 127.0.0.1).
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { randomUUID } from "node:crypto"
import { uniqueName } from "../support/TestPlatform.js"
import { baseUrl, SERVER_OPTIONS, testServer, testServerWithDatabase } from "../support/TestServer.js"
import { clientAt, expectFailure } from "../support/Api.js"
import { call, expectError, expectValidation } from "../support/Raw.js"
import { createKey, INTERNAL_KEY, oauthSession, sha256Hex, signUp } from "../support/Tenants.js"
import { UUID } from "../support/Formats.js"
import { anonymous, config } from "./auth-support.js"

layer(testServerWithDatabase("database", config), SERVER_OPTIONS)("auth over HTTP", (it) => {
  describe("POST /v1/auth/password", () => {
    it.effect("answers 200 with a new session; sessions issued before the change answer 401", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const api = yield* anonymous
        const user = yield* signUp(base)
        const loginBefore = yield* api.auth.login({ payload: { username: user.username, password: user.password } })
        const newPassword = sha256Hex("new secret")
        const changed = yield* api.auth.changePassword({
          payload: { username: user.username, current_password: user.password, new_password: newPassword }
        })
        expect(changed).toMatchObject({ user_id: user.user_id, username: user.username })

        // Both older sessions are over; the new one works.
        for (const old of [user.jwt, loginBefore.jwt]) {
          const before = yield* clientAt(base, { token: old })
          yield* expectFailure(before.settings.getSettings({}), 401)
          yield* expectFailure(before.apiKeys.listApiKeys({}), 401)
          yield* expectFailure(before.team.listMyWorkspaces({ headers: { "x-service-user-id": user.user_id } }), 401)
        }
        yield* (yield* clientAt(base, { token: changed.jwt })).settings.getSettings({})

        // The old password no longer logs in; the new one does.
        yield* expectFailure(
          api.auth.login({ payload: { username: user.username, password: user.password } }),
          401,
          "invalid_credentials"
        )
        yield* api.auth.login({ payload: { username: user.username, password: newPassword } })
      })
    )

    it.effect("a wrong current password or unknown user answers 401 and changes nothing", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const user = yield* signUp(base)
        // Raw: the two error bodies are compared whole, as sent.
        const wrong = yield* call(base, "POST", "/v1/auth/password", {
          body: { username: user.username, current_password: sha256Hex("nope"), new_password: sha256Hex("x") }
        })
        expectError(wrong, 401, "invalid_credentials")
        const unknown = yield* call(base, "POST", "/v1/auth/password", {
          body: { username: uniqueName("ghost"), current_password: user.password, new_password: sha256Hex("x") }
        })
        expectError(unknown, 401, "invalid_credentials")
        expect(unknown.body).toEqual(wrong.body)
        // The session from before still works and the password is unchanged.
        yield* user.api.settings.getSettings({})
        yield* (yield* anonymous).auth.login({ payload: { username: user.username, password: user.password } })
      })
    )

    // Raw: bodies the schema refuses and a wrong media type.
    it.effect("bad digests answer 400 naming the field; a missing username 400; a wrong content type 415", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const good = sha256Hex("pw")
        const current = yield* call(base, "POST", "/v1/auth/password", {
          body: { username: "u", current_password: "my old secret", new_password: good }
        })
        expectValidation(current, "current_password")
        const next = yield* call(base, "POST", "/v1/auth/password", {
          body: { username: "u", current_password: good, new_password: "my new secret" }
        })
        expectValidation(next, "new_password")
        // Plaintexts sent by mistake are not echoed back.
        expect(current.text).not.toContain("my old secret")
        expect(next.text).not.toContain("my new secret")
        expectValidation(
          yield* call(base, "POST", "/v1/auth/password", {
            body: { username: "u", current_password: good, new_password: "a".repeat(63) }
          }),
          "new_password"
        )
        expectValidation(
          yield* call(base, "POST", "/v1/auth/password", { body: { current_password: good, new_password: good } }),
          "username"
        )
        expectError(
          yield* call(base, "POST", "/v1/auth/password", {
            raw: JSON.stringify({ username: "u", current_password: good, new_password: good }),
            contentType: "text/plain"
          }),
          415,
          "unsupported_media_type"
        )
      })
    )
  })

  describe("POST /v1/identity/oauth-session (internal)", () => {
    it.effect("with the internal key creates a user with a personal workspace and answers a Session", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const email = `${uniqueName("New.User")}@Example.com`
        const session = yield* oauthSession(base, { email, provider: "google", provider_subject: randomUUID() })
        expect(session.user_id).toMatch(UUID)
        expect(typeof session.username).toBe("string")
        const api = yield* clientAt(base, { token: session.jwt })
        const mine = yield* api.team.listMyWorkspaces({ headers: { "x-service-user-id": session.user_id } })
        expect(mine.workspaces).toHaveLength(1)
        expect(mine.workspaces[0]!.role).toBe("owner")
        const { environments } = yield* api.environments.listEnvironments({})
        expect(environments).toEqual([expect.objectContaining({ is_default: true, slug: "production" })])
      })
    )

    it.effect("finds the user by provider + subject, and links another provider by email", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const email = `${uniqueName("link")}@example.com`
        const subject = randomUUID()
        const first = yield* oauthSession(base, { email, provider: "google", provider_subject: subject })
        // The same identity again, even with a changed email: the same user.
        const again = yield* oauthSession(base, {
          email: `${uniqueName("changed")}@example.com`,
          provider: "google",
          provider_subject: subject
        })
        expect(again.user_id).toBe(first.user_id)
        // Another provider with the same email (other case): linked to the same user.
        const linked = yield* oauthSession(base, {
          email: email.toUpperCase(),
          provider: "github",
          provider_subject: randomUUID()
        })
        expect(linked.user_id).toBe(first.user_id)
        // ...and from then on found by that provider's subject.
        // Another email and subject: another user.
        const other = yield* oauthSession(base, {
          email: `${uniqueName("other")}@example.com`,
          provider: "google",
          provider_subject: randomUUID()
        })
        expect(other.user_id).not.toBe(first.user_id)
        // Every session it answered works.
        for (const session of [first, again, linked, other]) {
          yield* (yield* clientAt(base, { token: session.jwt })).settings.getSettings({})
        }
      })
    )

    it.effect("the same subject under another provider is another identity", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const subject = randomUUID()
        const a = yield* oauthSession(base, {
          email: `${uniqueName("pa")}@example.com`,
          provider: "google",
          provider_subject: subject
        })
        const b = yield* oauthSession(base, {
          email: `${uniqueName("pb")}@example.com`,
          provider: "github",
          provider_subject: subject
        })
        expect(b.user_id).not.toBe(a.user_id)
      })
    )

    it.effect("answers 401 to no credential, a session JWT, a runtime key or a wrong key", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const user = yield* signUp(base)
        const key = yield* createKey(user)
        const body = { email: `${uniqueName("x")}@example.com`, provider: "google", provider_subject: randomUUID() }
        for (const token of [
          undefined,
          user.jwt,
          key.plaintext_key,
          `${INTERNAL_KEY}x`,
          "",
          INTERNAL_KEY.slice(0, -1)
        ]) {
          yield* expectFailure((yield* clientAt(base, { token })).auth.oauthSession({ payload: body }), 401)
        }
        // Nothing was created for that identity: the internal key now creates a fresh user.
        const created = yield* oauthSession(base, body)
        expect(created.user_id).not.toBe(user.user_id)
      })
    )

    it.effect("the internal key is refused by non-internal endpoints (401)", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const internal = yield* clientAt(base, { token: INTERNAL_KEY })
        yield* expectFailure(internal.settings.getSettings({}), 401)
        yield* expectFailure(internal.apiKeys.listApiKeys({}), 401)
        yield* expectFailure(internal.environments.listEnvironments({}), 401)
        yield* expectFailure(internal.team.listMembers({ urlParams: {} }), 401)
        yield* expectFailure(internal.apiKeys.createApiKey({ payload: { name: "k" } }), 401)
      })
    )

    // Raw: bodies the schema refuses (the client would not send them).
    it.effect("missing or empty fields answer 400 naming the field", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const valid = { email: `${uniqueName("v")}@example.com`, provider: "google", provider_subject: "s-1" }
        for (const field of ["email", "provider", "provider_subject"] as const) {
          const { [field]: _, ...without } = valid
          expectValidation(
            yield* call(base, "POST", "/v1/identity/oauth-session", { token: INTERNAL_KEY, body: without }),
            field
          )
          expectValidation(
            yield* call(base, "POST", "/v1/identity/oauth-session", {
              token: INTERNAL_KEY,
              body: { ...valid, [field]: "" }
            }),
            field
          )
          expectValidation(
            yield* call(base, "POST", "/v1/identity/oauth-session", {
              token: INTERNAL_KEY,
              body: { ...valid, [field]: 7 }
            }),
            field
          )
        }
      })
    )

    // Users are linked by email: a blank email would link every identity sent with a blank
    // email to one account. The server trims the email, so "   " is an empty email: a 400.
    // Raw: the client itself refuses an email that is not trimmed.
    it.effect("a blank email answers 400 naming email (no account is created or linked)", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const first = yield* call(base, "POST", "/v1/identity/oauth-session", {
          token: INTERNAL_KEY,
          body: { email: "   ", provider: "google", provider_subject: randomUUID() }
        })
        expectValidation(first, "email")
      })
    )

    // A double-clicked sign-in, or a client retry, must not split one identity into several accounts.
    it.effect("concurrent calls for one new identity answer the same user", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const internal = yield* clientAt(base, { token: INTERNAL_KEY })
        const body = {
          email: `${uniqueName("race")}@example.com`,
          provider: "google",
          provider_subject: randomUUID()
        }
        const sessions = yield* Effect.all(
          Array.from({ length: 6 }, () => internal.auth.oauthSession({ payload: body })),
          { concurrency: "unbounded" }
        )
        const userIds = sessions.map((session) => session.user_id)
        expect(new Set(userIds).size, JSON.stringify(userIds)).toBe(1)
        // And later calls agree with them.
        expect((yield* oauthSession(base, body)).user_id).toBe(userIds[0])
      })
    )

    // Raw: a wrong media type and malformed JSON.
    it.effect("a wrong content type answers 415, malformed JSON 400", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        expectError(
          yield* call(base, "POST", "/v1/identity/oauth-session", {
            token: INTERNAL_KEY,
            raw: JSON.stringify({ email: "a@b.c", provider: "google", provider_subject: "s" }),
            contentType: "text/plain"
          }),
          415,
          "unsupported_media_type"
        )
        expectError(
          yield* call(base, "POST", "/v1/identity/oauth-session", { token: INTERNAL_KEY, raw: "{nope" }),
          400,
          "malformed_json"
        )
      })
    )
  })
})

// ---------------------------------------------------------------- no internal key configured

layer(testServer("database"), SERVER_OPTIONS)("auth over HTTP (no INTERNAL_API_KEY)", (it) => {
  it.effect("oauth-session answers 401 to every credential when no internal key is configured", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const user = yield* signUp(base)
      const body = { email: `${uniqueName("n")}@example.com`, provider: "google", provider_subject: "s" }
      for (const headers of [
        {},
        { authorization: "Bearer " },
        { authorization: `Bearer ${user.jwt}` },
        { authorization: `Bearer ${INTERNAL_KEY}` }
      ]) {
        yield* expectFailure((yield* clientAt(base, { headers })).auth.oauthSession({ payload: body }), 401)
      }
    })
  )
})
