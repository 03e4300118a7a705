/**
 * Property-based robustness of the identity issue's workspace endpoints
 * (keys, team, settings, environments, my-workspaces): random JSON bodies
 * (mostly objects with the endpoint's own field names holding near-valid or
 * hostile values), random non-JSON text, random content types, random path
 * ids and headers, sent with a valid owner session (or the internal key, or
 * nothing, for my-workspaces). The answer is never a 5xx; a 4xx always
 * carries {error: {code, message}} with a snake_case code, and the owner's
 * session holds. Seeds are fixed, so a failure replays. The auth endpoints
 * are in identity-fuzz-auth.test.ts.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import fc from "fast-check"
import { INTERNAL_KEY } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import { bodies, pathIds, printable, queries, workspaceHeader, type World } from "./identity-fuzz-arbitraries.js"
import { count, fuzz, FUZZ_TIMEOUT, INVITED, type Sent, setUp, withJson } from "./identity-fuzz-support.js"

layer(testServer("database", { INTERNAL_API_KEY: INTERNAL_KEY, LOGIN_FAILURE_LIMIT: "1000000" }), SERVER_OPTIONS)(
  "identity endpoints under random input",
  (it) => {
    describe("workspace endpoints (owner session)", () => {
      const bodyEndpoints: ReadonlyArray<{
        readonly method: string
        readonly label: string
        readonly paths: (world: World) => fc.Arbitrary<string>
        readonly fields: ReadonlyArray<string>
        /** A random body is valid often enough that some 2xx must show up. */
        readonly someSuccess: boolean
      }> = [
        {
          method: "POST",
          label: "/v1/api-keys",
          paths: () => fc.constant("/v1/api-keys"),
          fields: ["name", "environment_id"],
          someSuccess: true
        },
        {
          method: "PATCH",
          label: "/v1/api-keys/batch/revoke",
          paths: () => fc.constant("/v1/api-keys/batch/revoke"),
          fields: ["ids"],
          someSuccess: true
        },
        {
          method: "POST",
          label: "/v1/team/my-workspaces",
          paths: () => fc.constant("/v1/team/my-workspaces"),
          fields: ["name"],
          someSuccess: true
        },
        {
          method: "POST",
          label: "/v1/team/invites",
          paths: () => fc.constant("/v1/team/invites"),
          fields: ["email", "role"],
          someSuccess: true
        },
        {
          method: "PATCH",
          label: "/v1/settings",
          paths: () => fc.constant("/v1/settings"),
          fields: [
            "approval_checker_mode",
            "flow_checker_mode",
            "memory_checker_mode",
            "param_checker_mode",
            "data_handling_mode",
            "default_action",
            "escalation_webhook_url",
            "retention_days",
            "telemetry_enabled",
            "config"
          ],
          someSuccess: true
        },
        {
          method: "POST",
          label: "/v1/environments",
          paths: () => fc.constant("/v1/environments"),
          fields: ["name", "slug", "description"],
          someSuccess: true
        },
        {
          method: "PATCH",
          label: "/v1/environments/{id}",
          paths: (world) => pathIds(world).map((id) => `/v1/environments/${id}`),
          fields: ["name", "description", "slug"],
          someSuccess: true
        },
        {
          method: "PUT",
          label: "/v1/environments/{id}/checker-modes",
          paths: (world) => pathIds(world).map((id) => `/v1/environments/${id}/checker-modes`),
          fields: ["approval_checker_mode", "flow_checker_mode", "memory_checker_mode", "param_checker_mode"],
          someSuccess: true
        }
      ]
      for (const { fields, label, method, paths, someSuccess } of bodyEndpoints) {
        it.effect(
          `${method} ${label}: never 5xx, 4xx with the error body`,
          () =>
            Effect.gen(function* () {
              const world = yield* setUp(yield* baseUrl)
              const requests = fc
                .record({ path: paths(world), body: bodies(world, fields), workspace: workspaceHeader(world) })
                .map(({ body, path, workspace }): Sent => {
                  const headers: Record<string, string> = { authorization: `Bearer ${world.owner.jwt}` }
                  if (workspace !== undefined) headers["x-service-workspace-id"] = workspace
                  return { method, path, ...withJson(headers, body) }
                })
              const statuses = yield* fuzz(world.base, requests, { name: `${method} ${label}`, sessionMustHold: true })
              const seen = JSON.stringify([...statuses])
              expect(
                count(statuses, (s) => s === 400),
                `${label} ${seen}`
              ).toBeGreaterThan(0)
              if (someSuccess)
                expect(
                  count(statuses, (s) => s < 300),
                  `${label} ${seen}`
                ).toBeGreaterThan(0)
              // The owner's session and workspace survived it all.
              yield* world.owner.api.settings.getSettings({})
            }),
          FUZZ_TIMEOUT
        )
      }

      it.effect(
        "GET and DELETE routes with random ids, queries and workspace headers: never 5xx",
        () =>
          Effect.gen(function* () {
            const world = yield* setUp(yield* baseUrl)
            const route = fc.oneof(
              fc.constantFrom("GET /v1/api-keys", "GET /v1/team/members", "GET /v1/settings", "GET /v1/environments"),
              pathIds(world).map((id) => `GET /v1/environments/${id}/checker-modes`),
              pathIds(world).map((id) => `DELETE /v1/environments/${id}`)
            )
            const requests = fc
              .record({ route, query: queries, workspace: workspaceHeader(world) })
              .map(({ query, route, workspace }): Sent => {
                const [method, path] = route.split(" ") as [string, string]
                const headers: Record<string, string> = { authorization: `Bearer ${world.owner.jwt}` }
                if (workspace !== undefined) headers["x-service-workspace-id"] = workspace
                return { method, path: `${path}${query}`, headers }
              })
            const statuses = yield* fuzz(world.base, requests, { name: "GET/DELETE routes", sessionMustHold: true })
            expect(
              count(statuses, (s) => s === 200),
              JSON.stringify([...statuses])
            ).toBeGreaterThan(0)
            expect(
              count(statuses, (s) => s === 404),
              JSON.stringify([...statuses])
            ).toBeGreaterThan(0)
          }),
        FUZZ_TIMEOUT
      )

      it.effect(
        "GET /v1/team/my-workspaces with random user ids, emails and credentials: never 5xx",
        () =>
          Effect.gen(function* () {
            const world = yield* setUp(yield* baseUrl)
            const requests = fc
              .record({
                userId: fc.option(
                  fc.oneof(
                    fc.constantFrom(world.owner.user_id, world.owner.user_id.toUpperCase(), world.other.user_id, ""),
                    { weight: 2, arbitrary: fc.uuid() },
                    printable(40)
                  ),
                  { nil: undefined, freq: 8 }
                ),
                email: fc.option(
                  fc.oneof(
                    { weight: 3, arbitrary: fc.constantFrom(...INVITED, "INVITED1@example.com") },
                    fc.constantFrom("", " ", "no-at-sign", "a@b"),
                    fc.emailAddress(),
                    printable(60)
                  ),
                  { nil: undefined, freq: 3 }
                ),
                token: fc.constantFrom(world.owner.jwt, INTERNAL_KEY, "garbage", undefined),
                query: queries
              })
              .map(({ email, query, token, userId }): Sent => {
                const headers: Record<string, string> = {}
                if (token !== undefined) headers["authorization"] = `Bearer ${token}`
                if (userId !== undefined) headers["x-service-user-id"] = userId
                if (email !== undefined) headers["x-service-user-email"] = email
                return { method: "GET", path: `/v1/team/my-workspaces${query}`, headers }
              })
            const statuses = yield* fuzz(world.base, requests, {
              name: "GET /v1/team/my-workspaces",
              sessionMustHold: false
            })
            expect(
              count(statuses, (s) => s === 200),
              JSON.stringify([...statuses])
            ).toBeGreaterThan(0)
          }),
        FUZZ_TIMEOUT
      )
    })
  }
)
