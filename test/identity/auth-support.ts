/**
 * Shared by the auth suites (auth-signup-login-http.test.ts,
 * auth-password-oauth-http.test.ts, auth-sessions-http.test.ts): the main
 * server's settings and the anonymous client.
 */
import { Effect } from "effect"
import { clientAt } from "../support/Api.js"
import { INTERNAL_KEY } from "../support/Tenants.js"
import { baseUrl } from "../support/TestServer.js"

export const JWT_SECRET = "auth-http-test-jwt-secret-0123456789abcdefghijklmnop"

/**
 * The main layer's settings. Login throttling has its own file
 * (login-throttle.test.ts): here the failure limit is raised so the few
 * deliberate failures of these files can never throttle another test (all of
 * them come from 127.0.0.1).
 */
export const config = { INTERNAL_API_KEY: INTERNAL_KEY, JWT_SECRET, LOGIN_FAILURE_LIMIT: "1000" }

/** The anonymous client, for the auth endpoints. */
export const anonymous = Effect.flatMap(baseUrl, (base) => clientAt(base))
