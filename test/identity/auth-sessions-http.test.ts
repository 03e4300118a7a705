/**
 * Auth over HTTP against the real service and PostgreSQL: how session JWTs,
 * runtime keys and the internal key are told apart (forged, tampered,
 * expired or claim-less tokens are refused), the workspace header, the
 * timestamps' format, and a session that outlives SESSION_TTL_SECONDS.
 * Signup and login are in auth-signup-login-http.test.ts; password change
 * and the OAuth session exchange in auth-password-oauth-http.test.ts.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SignJWT } from "jose"
import { randomUUID } from "node:crypto"
import { baseUrl, SERVER_OPTIONS, testServer, testServerWithDatabase } from "../support/TestServer.js"
import { clientAt, expectFailure } from "../support/Api.js"
import { signUp } from "../support/Tenants.js"
import { answerOf, describeAnswer } from "./http-helpers.js"
import { TIMESTAMP } from "../support/Formats.js"
import { config, JWT_SECRET } from "./auth-support.js"

/**
 * A token signed with `secret`, as the service's own tokens are (iss, aud, sub, pwv, iat, exp, jti);
 * `exp: null`, `iat: false` or `jti: false` leaves that claim out.
 */
const forge = (
  claims: { sub: string; pwv?: unknown; iss?: string; aud?: string; exp?: number | null; iat?: false; jti?: false },
  secret = JWT_SECRET
) =>
  Effect.promise(() => {
    const jwt = new SignJWT(claims.pwv === undefined ? {} : { pwv: claims.pwv })
      .setProtectedHeader({ alg: "HS256", typ: "JWT" })
      .setIssuer(claims.iss ?? "guardrail-service")
      .setAudience(claims.aud ?? "guardrail-api")
      .setSubject(claims.sub)
    if (claims.iat !== false) jwt.setIssuedAt()
    if (claims.jti !== false) jwt.setJti(randomUUID())
    if (claims.exp !== null) jwt.setExpirationTime(claims.exp ?? Math.floor(Date.now() / 1000) + 3600)
    return jwt.sign(new TextEncoder().encode(secret))
  })

layer(testServerWithDatabase("database", config), SERVER_OPTIONS)("auth over HTTP", (it) => {
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
            // Without a jti it could not be signed out.
            ["no jti", yield* forge({ sub: user.user_id, pwv: 1, jti: false })],
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

    it.effect(
      "signing out ends that session only: its JWT then answers 401 session_ended, the user's others go on",
      () =>
        Effect.gen(function* () {
          const base = yield* baseUrl
          const user = yield* signUp(base)
          const anonymous = yield* clientAt(base)
          const other = yield* anonymous.auth.login({ payload: { username: user.username, password: user.password } })
          const otherSession = yield* clientAt(base, { token: other.jwt })
          yield* user.api.settings.getSettings({})

          yield* user.api.auth.logout({})
          yield* expectFailure(user.api.settings.getSettings({}), 401, "session_ended")
          yield* expectFailure(user.api.reviewQueues.listReviewQueues({ urlParams: {} }), 401, "session_ended")
          // Signing out again, or with no session at all, is refused the same way.
          yield* expectFailure(user.api.auth.logout({}), 401, "session_ended")
          yield* expectFailure(anonymous.auth.logout({}), 401, "unauthenticated")
          // The same user's other session, and a new sign-in, are not touched.
          yield* otherSession.settings.getSettings({})
          const again = yield* anonymous.auth.login({ payload: { username: user.username, password: user.password } })
          yield* (yield* clientAt(base, { token: again.jwt })).settings.getSettings({})
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
            ["GET /v1/team/members", elsewhere.team.listMembers({ urlParams: {} })]
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
