/**
 * Property-based robustness of the identity issue's auth endpoints (signup,
 * login, password change, and the internal key's oauth-session): random JSON
 * bodies (mostly objects with the endpoint's own field names holding
 * near-valid or hostile values), random non-JSON text and random content
 * types, sent with no credential or the internal key, as the endpoint needs.
 * The answer is never a 5xx; a 4xx always carries {error: {code, message}}
 * with a snake_case code. Seeds are fixed, so a failure replays. The
 * workspace endpoints (owner session) are in identity-fuzz-workspace.test.ts.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { INTERNAL_KEY } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import { bodies } from "./identity-fuzz-arbitraries.js"
import { count, fuzz, FUZZ_TIMEOUT, type Sent, setUp, withJson } from "./identity-fuzz-support.js"

layer(testServer("database", { INTERNAL_API_KEY: INTERNAL_KEY, LOGIN_FAILURE_LIMIT: "1000000" }), SERVER_OPTIONS)(
  "identity endpoints under random input",
  (it) => {
    describe("auth (no credential, or the internal key)", () => {
      const authEndpoints: ReadonlyArray<readonly [string, ReadonlyArray<string>, string | undefined]> = [
        ["/v1/auth/signup", ["username", "password"], undefined],
        ["/v1/auth/login", ["username", "password"], undefined],
        ["/v1/auth/password", ["username", "current_password", "new_password"], undefined],
        ["/v1/identity/oauth-session", ["email", "provider", "provider_subject"], INTERNAL_KEY]
      ]
      for (const [path, fields, token] of authEndpoints) {
        it.effect(
          `POST ${path}: never 5xx, 4xx with the error body`,
          () =>
            Effect.gen(function* () {
              const world = yield* setUp(yield* baseUrl)
              const requests = bodies(world, fields).map((body): Sent => ({
                method: "POST",
                path,
                ...withJson(token === undefined ? {} : { authorization: `Bearer ${token}` }, body)
              }))
              const statuses = yield* fuzz(world.base, requests, {
                name: `POST ${path}`,
                sessionMustHold: token !== undefined
              })
              expect(
                count(statuses, (s) => s === 400),
                JSON.stringify([...statuses])
              ).toBeGreaterThan(0)
            }),
          FUZZ_TIMEOUT
        )
      }
    })
  }
)
