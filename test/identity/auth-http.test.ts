/**
 * Auth over HTTP against the real service and PostgreSQL: signup, login,
 * password change, the internal OAuth session exchange, and how session
 * JWTs, runtime keys and the internal key are told apart.
 *
 * Login throttling has its own file (login-throttle.test.ts): here the
 * failure limit is raised so the few deliberate failures of this file can
 * never throttle another test (all of them come from 127.0.0.1).
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SignJWT } from "jose"
import { randomUUID } from "node:crypto"
import { uniqueName } from "../support/TestPlatform.js"
import { baseUrl, SERVER_OPTIONS, TestDatabaseUrl, testServer, testServerWithDatabase } from "../support/TestServer.js"
import { clientAt, expectFailure, withRaw } from "../support/Api.js"
import { call, expectError, expectValidation } from "../support/Raw.js"
import { createKey, INTERNAL_KEY, oauthSession, sha256Hex, signUp } from "../support/Tenants.js"
import { answerOf, describeAnswer } from "./http-helpers.js"
import { queryDatabase } from "../support/Database.js"
import { TIMESTAMP, UUID } from "../support/Formats.js"

const JWT_SECRET = "auth-http-test-jwt-secret-0123456789abcdefghijklmnop"

const config = { INTERNAL_API_KEY: INTERNAL_KEY, JWT_SECRET, LOGIN_FAILURE_LIMIT: "1000" }

/**
 * A token signed with `secret`, as the service's own tokens are (iss, aud, sub, pwv, iat, exp);
 * `exp: null` or `iat: false` leaves that claim out.
 */
const forge = (
  claims: { sub: string; pwv?: unknown; iss?: string; aud?: string; exp?: number | null; iat?: false },
  secret = JWT_SECRET
) =>
  Effect.promise(() => {
    const jwt = new SignJWT(claims.pwv === undefined ? {} : { pwv: claims.pwv })
      .setProtectedHeader({ alg: "HS256", typ: "JWT" })
      .setIssuer(claims.iss ?? "guardrail-service")
      .setAudience(claims.aud ?? "guardrail-api")
      .setSubject(claims.sub)
    if (claims.iat !== false) jwt.setIssuedAt()
    if (claims.exp !== null) jwt.setExpirationTime(claims.exp ?? Math.floor(Date.now() / 1000) + 3600)
    return jwt.sign(new TextEncoder().encode(secret))
  })

const badDigests: ReadonlyArray<readonly [string, unknown]> = [
  ["63 hex characters", "a".repeat(63)],
  ["65 hex characters", "a".repeat(65)],
  ["64 characters, not hex", "g".repeat(64)],
  ["a plaintext password", "correct horse battery staple"],
  ["the empty string", ""],
  ["a number", 12345],
  ["null", null]
]

/** The anonymous client, for the auth endpoints. */
const anonymous = Effect.flatMap(baseUrl, (base) => clientAt(base))

layer(testServerWithDatabase("database", config), SERVER_OPTIONS)("auth over HTTP", (it) => {
  describe("POST /v1/auth/signup", () => {
    it.effect("answers 200 with a Session {jwt, user_id (UUID), username}", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const username = uniqueName("Signup")
        const {
          body,
          status,
          value: session
        } = yield* withRaw(
          (yield* anonymous).auth.signup({ payload: { username, password: sha256Hex("pw") }, withResponse: true })
        )
        expect(status).toBe(200)
        // The body as sent: decoding would drop any field the contract does not name.
        expect(Object.keys(body as object).sort()).toEqual(["jwt", "user_id", "username", "workspace_id"])
        expect(session.user_id).toMatch(UUID)
        expect(session.username).toBe(username)
        expect(session.jwt.split(".")).toHaveLength(3)
        // The session works at once.
        yield* (yield* clientAt(base, { token: session.jwt })).settings.getSettings({})
      })
    )

    it.effect("creates the user, a personal organization and workspace (owner) and the default environment", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const db = yield* TestDatabaseUrl
        const user = yield* signUp(base)

        const mine = yield* user.api.team.listMyWorkspaces({ headers: { "x-service-user-id": user.user_id } })
        expect(mine.is_platform_admin).toBe(false)
        expect(mine.workspaces).toHaveLength(1)
        const workspace = mine.workspaces[0]!
        expect(workspace).toMatchObject({ role: "owner" })
        expect(typeof workspace.id).toBe("string")
        expect(typeof workspace.organization_id).toBe("string")
        expect(typeof workspace.slug).toBe("string")
        expect(typeof workspace.name).toBe("string")

        const { environments } = yield* user.api.environments.listEnvironments({})
        expect(environments).toHaveLength(1)
        expect(environments[0]).toMatchObject({ is_default: true, slug: "production" })

        // The organization is the user's, with the user as its owner.
        const organizationMembers = yield* queryDatabase(
          db,
          "select user_id::text as user_id, role from organization_members where organization_id = $1",
          [workspace.organization_id]
        )
        expect(organizationMembers).toEqual([{ user_id: user.user_id, role: "owner" }])
        const members = yield* queryDatabase(
          db,
          "select user_id::text as user_id, role from workspace_members where workspace_id = $1",
          [workspace.id]
        )
        expect(members).toEqual([{ user_id: user.user_id, role: "owner" }])
      })
    )

    it.effect("stores only a salted slow hash of the digest", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const db = yield* TestDatabaseUrl
        const first = yield* signUp(base)
        const [row] = yield* queryDatabase<{ password_hash: string }>(
          db,
          "select password_hash from users where id = $1",
          [first.user_id]
        )
        expect(row!.password_hash).toMatch(/^scrypt\$/)
        expect(row!.password_hash).not.toContain(first.password)
        // Same digest, another user: another salt, another hash.
        const username = uniqueName("same_pw")
        const second = yield* (yield* anonymous).auth.signup({ payload: { username, password: first.password } })
        const [other] = yield* queryDatabase<{ password_hash: string }>(
          db,
          "select password_hash from users where id = $1",
          [second.user_id]
        )
        expect(other!.password_hash).not.toBe(row!.password_hash)
      })
    )

    it.effect(
      "a taken username answers 409 username_taken, case-insensitively; padded with spaces it is no new name",
      () =>
        Effect.gen(function* () {
          const base = yield* baseUrl
          const api = yield* anonymous
          const user = yield* signUp(base, uniqueName("Taken"))
          for (const username of [user.username, user.username.toUpperCase(), user.username.toLowerCase()]) {
            yield* expectFailure(
              api.auth.signup({ payload: { username, password: sha256Hex("other") } }),
              409,
              "username_taken"
            )
          }
          // " name " must not become a look-alike second account: 409 (trimmed) or 400 (refused), never 200.
          // Raw: the client itself refuses a username that is not trimmed.
          const padded = yield* call(base, "POST", "/v1/auth/signup", {
            body: { username: ` ${user.username} `, password: sha256Hex("other") }
          })
          expect([400, 409], padded.text).toContain(padded.status)
          expectError(padded, padded.status)
          // The original account is untouched: its password still logs in.
          yield* api.auth.login({ payload: { username: user.username, password: user.password } })
        })
    )

    it.effect("concurrent signups of one username: exactly one succeeds, the others answer 409", () =>
      Effect.gen(function* () {
        const api = yield* anonymous
        const username = uniqueName("racer")
        const answers = yield* Effect.all(
          Array.from({ length: 6 }, (_, i) =>
            answerOf(
              api.auth.signup({
                payload: {
                  username: i % 2 === 0 ? username : username.toUpperCase(),
                  password: sha256Hex(`pw ${i}`)
                }
              }),
              200
            )
          ),
          { concurrency: "unbounded" }
        )
        expect(answers.map((answer) => answer.status).sort(), answers.map(describeAnswer).join("; ")).toEqual([
          200, 409, 409, 409, 409, 409
        ])
        for (const answer of answers.filter((a) => a.status === 409)) expect(answer.error?.code).toBe("username_taken")
      })
    )

    // Raw from here to the end of the block: these bodies break the schema on purpose, which the client refuses to send.
    it.effect("a password that is not a 64-character hex digest answers 400 naming password", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        for (const [label, password] of badDigests) {
          const response = yield* call(base, "POST", "/v1/auth/signup", {
            body: { username: uniqueName("bad_pw"), password }
          })
          expect(response.status, `${label}: ${response.text}`).toBe(400)
          expectValidation(response, "password")
        }
        const missing = yield* call(base, "POST", "/v1/auth/signup", { body: { username: uniqueName("no_pw") } })
        expectValidation(missing, "password")
      })
    )

    it.effect("a missing, empty or blank username answers 400 naming username", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const password = sha256Hex("pw")
        expectValidation(yield* call(base, "POST", "/v1/auth/signup", { body: { password } }), "username")
        expectValidation(yield* call(base, "POST", "/v1/auth/signup", { body: { username: "", password } }), "username")
        expectValidation(yield* call(base, "POST", "/v1/auth/signup", { body: { username: 42, password } }), "username")
        // Blank after trimming: the server trims usernames, so "   " would be an empty username.
        expectValidation(
          yield* call(base, "POST", "/v1/auth/signup", { body: { username: "   ", password } }),
          "username"
        )
      })
    )

    it.effect("malformed JSON is 400 malformed_json, an empty body 400, a non-JSON content type 415", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        expectError(yield* call(base, "POST", "/v1/auth/signup", { raw: "{bad" }), 400, "malformed_json")
        expectError(yield* call(base, "POST", "/v1/auth/signup", { raw: "" }), 400, "validation_failed")
        expectError(yield* call(base, "POST", "/v1/auth/signup", { raw: "[]" }), 400, "validation_failed")
        const wrongType = yield* call(base, "POST", "/v1/auth/signup", {
          raw: JSON.stringify({ username: uniqueName("ct"), password: sha256Hex("pw") }),
          contentType: "text/plain"
        })
        expectError(wrongType, 415, "unsupported_media_type")
        const form = yield* call(base, "POST", "/v1/auth/signup", {
          raw: `username=${uniqueName("form")}&password=${sha256Hex("pw")}`,
          contentType: "application/x-www-form-urlencoded"
        })
        expectError(form, 415, "unsupported_media_type")
      })
    )
  })

  describe("POST /v1/auth/login", () => {
    it.effect("answers 200 with a new working session for the right password", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const user = yield* signUp(base)
        const session = yield* (yield* anonymous).auth.login({
          payload: { username: user.username, password: user.password }
        })
        expect(session).toMatchObject({ user_id: user.user_id, username: user.username })
        expect(typeof session.jwt).toBe("string")
        yield* (yield* clientAt(base, { token: session.jwt })).environments.listEnvironments({})
      })
    )

    it.effect("the digest is case-insensitive hex and the username case-insensitive", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const user = yield* signUp(base, uniqueName("MixedCase"))
        const session = yield* (yield* anonymous).auth.login({
          payload: { username: user.username.toLowerCase(), password: user.password.toUpperCase() }
        })
        expect(session.user_id).toBe(user.user_id)
      })
    )

    it.effect("wrong password, unknown username and a password-less (OAuth) user all answer the same 401", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const user = yield* signUp(base)
        const email = `${uniqueName("oauthonly")}@example.com`
        const oauthUser = yield* oauthSession(base, { email, provider: "google", provider_subject: randomUUID() })

        // Raw: the three error bodies are compared whole, as sent.
        const wrongPassword = yield* call(base, "POST", "/v1/auth/login", {
          body: { username: user.username, password: sha256Hex("wrong") }
        })
        const unknownUser = yield* call(base, "POST", "/v1/auth/login", {
          body: { username: uniqueName("nobody"), password: user.password }
        })
        const passwordless = yield* call(base, "POST", "/v1/auth/login", {
          body: { username: oauthUser.username, password: sha256Hex("anything") }
        })
        expectError(wrongPassword, 401, "invalid_credentials")
        expectError(unknownUser, 401, "invalid_credentials")
        expectError(passwordless, 401, "invalid_credentials")
        expect(unknownUser.body).toEqual(wrongPassword.body)
        expect(passwordless.body).toEqual(wrongPassword.body)
        // Nothing in the answer hints which it was.
        expect(wrongPassword.text).not.toContain(user.username)
      })
    )

    // Raw: bodies the schema refuses, malformed JSON and a wrong media type.
    it.effect("a bad digest answers 400 naming password; a missing username 400; a wrong content type 415", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        for (const [label, password] of badDigests) {
          const response = yield* call(base, "POST", "/v1/auth/login", { body: { username: "someone", password } })
          expect(response.status, `${label}: ${response.text}`).toBe(400)
          expectValidation(response, "password")
        }
        expectValidation(
          yield* call(base, "POST", "/v1/auth/login", { body: { password: sha256Hex("pw") } }),
          "username"
        )
        expectError(yield* call(base, "POST", "/v1/auth/login", { raw: "{" }), 400, "malformed_json")
        expectError(
          yield* call(base, "POST", "/v1/auth/login", {
            raw: JSON.stringify({ username: "u", password: sha256Hex("pw") }),
            contentType: "text/plain"
          }),
          415,
          "unsupported_media_type"
        )
      })
    )
  })

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
        expectValidation(
          yield* call(base, "POST", "/v1/auth/password", {
            body: { username: "u", current_password: "plain", new_password: good }
          }),
          "current_password"
        )
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
        yield* expectFailure(internal.team.listMembers({}), 401)
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

  describe("session credentials", () => {
    it.effect("no credential, garbage, a foreign-signed, tampered or unsigned JWT answer 401", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const user = yield* signUp(base)
        const [header, payload, signature] = user.jwt.split(".") as [string, string, string]
        const claims = JSON.parse(Buffer.from(payload, "base64url").toString()) as Record<string, unknown>
        const otherUser = yield* signUp(base)
        const tampered = `${header}.${Buffer.from(JSON.stringify({ ...claims, sub: otherUser.user_id })).toString("base64url")}.${signature}`
        const unsigned = `${Buffer.from(JSON.stringify({ alg: "none", typ: "JWT" })).toString("base64url")}.${payload}.`
        const foreign = yield* forge({ sub: user.user_id, pwv: 1 }, "some-other-secret-0123456789abcdefghijklmnop")
        const cases: ReadonlyArray<readonly [string, Record<string, string>]> = [
          ["no header", {}],
          ["empty bearer", { authorization: "Bearer " }],
          ["garbage", { authorization: "Bearer not-a-token" }],
          ["wrong scheme", { authorization: `Basic ${Buffer.from("u:p").toString("base64")}` }],
          ["foreign signature", { authorization: `Bearer ${foreign}` }],
          ["tampered payload", { authorization: `Bearer ${tampered}` }],
          ["alg none", { authorization: `Bearer ${unsigned}` }],
          ["unknown gr_live_ key", { authorization: `Bearer gr_live_${"A".repeat(43)}` }]
        ]
        for (const [label, headers] of cases) {
          const answer = yield* answerOf((yield* clientAt(base, { headers })).settings.getSettings({}), 200)
          expect(answer.status, `${label}: ${describeAnswer(answer)}`).toBe(401)
        }
      })
    )

    it.effect(
      "a well-signed token is refused when expired or without exp or iat, for an unknown user, a wrong audience or issuer, or without pwv",
      () =>
        Effect.gen(function* () {
          const base = yield* baseUrl
          const user = yield* signUp(base)
          // Sanity: a token forged with the configured secret and the user's claims is accepted.
          const forged = yield* clientAt(base, { token: yield* forge({ sub: user.user_id, pwv: 1 }) })
          yield* forged.settings.getSettings({})
          const cases: ReadonlyArray<readonly [string, string]> = [
            ["expired", yield* forge({ sub: user.user_id, pwv: 1, exp: Math.floor(Date.now() / 1000) - 60 })],
            // Without exp a token signed with the secret would be valid forever.
            ["no exp", yield* forge({ sub: user.user_id, pwv: 1, exp: null })],
            ["no iat", yield* forge({ sub: user.user_id, pwv: 1, iat: false })],
            ["unknown user", yield* forge({ sub: randomUUID(), pwv: 1 })],
            ["not a uuid subject", yield* forge({ sub: "not-a-uuid", pwv: 1 })],
            ["wrong audience", yield* forge({ sub: user.user_id, pwv: 1, aud: "someone-else" })],
            ["wrong issuer", yield* forge({ sub: user.user_id, pwv: 1, iss: "someone-else" })],
            ["no pwv", yield* forge({ sub: user.user_id })],
            ["stale pwv", yield* forge({ sub: user.user_id, pwv: 0 })],
            ["string pwv", yield* forge({ sub: user.user_id, pwv: "1" })]
          ]
          for (const [label, token] of cases) {
            const answer = yield* answerOf((yield* clientAt(base, { token })).settings.getSettings({}), 200)
            expect(answer.status, `${label}: ${describeAnswer(answer)}`).toBe(401)
          }
        })
    )

    it.effect("X-SERVICE-Workspace-Id picks the workspace; one the user is not a member of answers 404", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const user = yield* signUp(base)
        const other = yield* signUp(base)
        const second = yield* user.api.team.createWorkspace({ payload: { name: "Second" } })
        const othersWorkspaces = yield* other.api.team.listMyWorkspaces({
          headers: { "x-service-user-id": other.user_id }
        })
        const othersWorkspace = othersWorkspaces.workspaces[0]!.id

        // The header selects the second workspace: its environments are not the default workspace's.
        const inDefault = yield* user.api.environments.listEnvironments({})
        const secondWorkspace = yield* clientAt(base, { token: user.jwt, workspace: second.id })
        const inSecond = yield* secondWorkspace.environments.listEnvironments({})
        expect(inSecond.environments).toHaveLength(1)
        expect(inSecond.environments[0]!.id).not.toBe(inDefault.environments[0]!.id)

        for (const workspace of [othersWorkspace, "ws_does_not_exist", "", " "].filter((w) => w.trim() !== "")) {
          const elsewhere = yield* clientAt(base, { token: user.jwt, workspace })
          const attempts: ReadonlyArray<readonly [string, Effect.Effect<unknown, unknown>]> = [
            ["GET /v1/settings", elsewhere.settings.getSettings({})],
            ["GET /v1/environments", elsewhere.environments.listEnvironments({})],
            ["GET /v1/api-keys", elsewhere.apiKeys.listApiKeys({})],
            ["GET /v1/team/members", elsewhere.team.listMembers({})]
          ]
          for (const [label, attempt] of attempts) {
            const answer = yield* answerOf(attempt, 200)
            expect(answer.status, `${label}: ${describeAnswer(answer)}`).toBe(404)
            expect(answer.error?.code).toBe("workspace_not_found")
          }
        }
      })
    )

    it.effect("timestamps of this issue's resources are RFC 3339 UTC with milliseconds", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const user = yield* signUp(base)
        const settings = yield* user.api.settings.getSettings({})
        expect(settings.updated_at).toMatch(TIMESTAMP)
        const { environments } = yield* user.api.environments.listEnvironments({})
        expect(environments[0]!.created_at).toMatch(TIMESTAMP)
        expect(environments[0]!.updated_at).toMatch(TIMESTAMP)
      })
    )
  })
})

// ---------------------------------------------------------------- short sessions

layer(testServer("database", { SESSION_TTL_SECONDS: "1" }), SERVER_OPTIONS)(
  "auth over HTTP (SESSION_TTL_SECONDS=1)",
  (it) => {
    it.effect("a session JWT answers 401 once SESSION_TTL_SECONDS have passed", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const user = yield* signUp(base)
        yield* Effect.sleep("2200 millis")
        yield* expectFailure(user.api.settings.getSettings({}), 401)
        // A fresh login works again.
        const again = yield* (yield* clientAt(base)).auth.login({
          payload: { username: user.username, password: user.password }
        })
        yield* (yield* clientAt(base, { token: again.jwt })).settings.getSettings({})
      })
    )
  }
)

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
