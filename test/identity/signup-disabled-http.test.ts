/**
 * SIGNUP_ENABLED=false (a self-hosted service whose accounts come from the
 * organisation's sign-in, as Langfuse's AUTH_DISABLE_SIGNUP): open signup
 * answers 403 and creates nothing; the OAuth session exchange still creates
 * and signs in users.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { call, expectError } from "../support/Raw.js"
import { INTERNAL_KEY, oauthSession, sha256Hex } from "../support/Tenants.js"
import { uniqueName } from "../support/TestPlatform.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"

layer(testServer("database", { SIGNUP_ENABLED: "false", INTERNAL_API_KEY: INTERNAL_KEY }), SERVER_OPTIONS)(
  "signup turned off",
  (it) => {
    it.effect("signup is 403 signup_disabled and makes no account; the OAuth exchange still makes users", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const username = uniqueName("nobody")
        const password = sha256Hex("correct horse battery staple")
        const refused = yield* call(base, "POST", "/v1/auth/signup", { body: { username, password } })
        expect(expectError(refused, 403, "signup_disabled").message).toContain("SIGNUP_ENABLED=false")
        // Nothing was made: the same username cannot sign in.
        expectError(yield* call(base, "POST", "/v1/auth/login", { body: { username, password } }), 401)

        const email = `${uniqueName("sso")}@example.com`
        const session = yield* oauthSession(base, { email, provider: "okta", provider_subject: uniqueName("sub") })
        expect(session.workspace_id).not.toBeNull()
        const me = yield* call(base, "GET", "/v1/me", { token: session.jwt })
        expect(me.status, me.text).toBe(200)
      })
    )
  }
)
