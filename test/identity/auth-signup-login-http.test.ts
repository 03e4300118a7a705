/**
 * Auth over HTTP against the real service and PostgreSQL: signup and login.
 * Password change and the internal OAuth session exchange are in
 * auth-password-oauth-http.test.ts; how session JWTs, runtime keys and the
 * internal key are told apart, and short sessions, in
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
import { baseUrl, SERVER_OPTIONS, TestDatabaseUrl, testServerWithDatabase } from "../support/TestServer.js"
import { clientAt, expectFailure, withRaw } from "../support/Api.js"
import { call, expectError, expectValidation } from "../support/Raw.js"
import { oauthSession, sha256Hex, signUp } from "../support/Tenants.js"
import { answerOf, describeAnswer } from "./http-helpers.js"
import { queryDatabase } from "../support/Database.js"
import { UUID } from "../support/Formats.js"
import { anonymous, config } from "./auth-support.js"

const badDigests: ReadonlyArray<readonly [string, unknown]> = [
  ["63 hex characters", "a".repeat(63)],
  ["65 hex characters", "a".repeat(65)],
  ["64 characters, not hex", "g".repeat(64)],
  ["a plaintext password", "correct horse battery staple"],
  ["the empty string", ""],
  ["a number", 12345],
  ["null", null]
]

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
          // A plaintext sent by mistake is not echoed back.
          if (typeof password === "string" && password !== "") expect(response.text, label).not.toContain(password)
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
          if (typeof password === "string" && password !== "") expect(response.text, label).not.toContain(password)
        }
        expectValidation(
          yield* call(base, "POST", "/v1/auth/login", { body: { password: sha256Hex("pw") } }),
          "username"
        )
        expectError(yield* call(base, "POST", "/v1/auth/login", { raw: "{" }), 400, "malformed_json")
        // A password left unquoted makes the body malformed; the 400 does not quote the body around the error.
        for (const raw of ['{"username":"someone","password":hunter2-secret}', "hunter2-secret"]) {
          const malformed = yield* call(base, "POST", "/v1/auth/login", { raw })
          expectError(malformed, 400, "malformed_json")
          expect(malformed.text, raw).not.toContain("hunter2")
        }
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
})
