/**
 * Workspace feature flags: a platform admin (PLATFORM_ADMIN_USER_IDS) turns
 * them off and on through the admin extension; while off, every
 * authenticated endpoint of the red-team, knowledge-source and gateway
 * groups answers 403 `feature_disabled` for that workspace only.
 */
import { expect, layer } from "@effect/vitest"
import { HttpServer } from "@effect/platform"
import { Context, Effect, Layer, Scope, Exit } from "effect"
import { GuardrailApi } from "../../src/Api.js"
import { featureOfGroup } from "../../src/identity/FeatureFlags.js"
import { makeRouteTable } from "../../src/http/Routes.js"
import {
  call,
  createKey,
  expectError,
  expectStatus,
  expectValidation,
  SERVER_OPTIONS,
  signUp,
  tenant
} from "../identity/http-helpers.js"
import { eventually } from "../support/Eventually.js"
import { baseUrl, TestDatabaseUrl, testServerOver, testServerWithDatabase } from "../support/TestServer.js"

const gatedRoutes = makeRouteTable(GuardrailApi).filter((route) => featureOfGroup[route.group] !== undefined)
const pathOf = (template: string) => template.replace(/:[A-Za-z_]+/g, "x")
const JWT_SECRET = "feature-flags-test-secret-0123456789abcdef0123456789"
/** Waits until `path` on the other instance answers `status`: the change notice has arrived (however loaded the machine). */
const reachesBase = (base: string, token: string, path: string, status: number) =>
  eventually(
    Effect.flatMap(call(base, "GET", path, { token }), (response) =>
      response.status === status ? Effect.void : Effect.fail(`still ${response.status}`)
    )
  )
const bodyOf = (method: string) => (method === "GET" || method === "DELETE" ? {} : { body: {} })

layer(testServerWithDatabase("database", { JWT_SECRET }), SERVER_OPTIONS)("workspace feature flags", (it) => {
  it.effect("a platform admin disables and enables features; disabled groups answer 403 feature_disabled", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const db = yield* TestDatabaseUrl
      const owner = yield* tenant(base)
      const other = yield* tenant(base)
      const platformAdmin = yield* signUp(base)

      // The admin endpoint on an instance that knows the platform admin's user id.
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(
        testServerOver("database", db, {
          JWT_SECRET,
          PLATFORM_ADMIN_USER_IDS: `someone-else,${platformAdmin.user_id}`
        }),
        scope
      )
      const address = Context.get(context, HttpServer.HttpServer).address
      const admin = `http://127.0.0.1:${address._tag === "TcpAddress" ? address.port : 0}`
      const adminJwt = platformAdmin.jwt
      const features = `/v1/admin/workspaces/${owner.workspaceId}/features`

      // Defaults: every feature on.
      expect(expectStatus(yield* call(admin, "GET", features, { token: adminJwt }), 200)).toEqual({
        workspace_id: owner.workspaceId,
        is_attacks_enabled: true,
        is_knowledge_base_enabled: true,
        is_mcp_gateway_enabled: true
      })
      expect(gatedRoutes.length).toBeGreaterThanOrEqual(10)
      for (const route of gatedRoutes) {
        const response = yield* call(base, route.method, pathOf(route.template), {
          token: owner.jwt,
          ...bodyOf(route.method)
        })
        const code = (response.body as { error?: { code?: string } }).error?.code
        expect(code, `${route.method} ${route.template}`).not.toBe("feature_disabled")
      }

      // Only a platform admin may read or set them; a workspace owner may not, even for their own workspace.
      expectError(
        yield* call(base, "PATCH", features, { token: owner.jwt, body: { is_attacks_enabled: false } }),
        403,
        "platform_admin_required"
      )
      expectError(yield* call(admin, "GET", features, { token: owner.jwt }), 403, "platform_admin_required")
      expectError(yield* call(admin, "GET", features, {}), 401)
      expectValidation(
        yield* call(admin, "PATCH", features, { token: adminJwt, body: { is_attacks_enabled: "no" } }),
        "is_attacks_enabled"
      )
      expectError(
        yield* call(admin, "GET", "/v1/admin/workspaces/ws_missing/features", { token: adminJwt }),
        404,
        "workspace_not_found"
      )

      const off = expectStatus(
        yield* call(admin, "PATCH", features, {
          token: adminJwt,
          body: { is_attacks_enabled: false, is_knowledge_base_enabled: false, is_mcp_gateway_enabled: false }
        }),
        200
      )
      expect(off).toEqual({
        workspace_id: owner.workspaceId,
        is_attacks_enabled: false,
        is_knowledge_base_enabled: false,
        is_mcp_gateway_enabled: false
      })
      const mine = expectStatus(
        yield* call(base, "GET", "/v1/team/my-workspaces", {
          token: owner.jwt,
          headers: { "x-service-user-id": owner.user_id }
        }),
        200
      )
      expect(mine.workspaces[0]).toMatchObject({ is_attacks_enabled: false, is_knowledge_base_enabled: false })
      // The base instance cached the flags as on (every gated route answered above); the admin
      // instance's change notice (PostgreSQL NOTIFY) drops that entry within moments.
      yield* reachesBase(base, owner.jwt, "/v1/gateway/routes", 403)

      // Every authenticated endpoint of a gated group answers 403 feature_disabled (public share links excepted).
      const gatedGroups = new Set<string>()
      for (const route of gatedRoutes) {
        const anonymous = yield* call(base, route.method, pathOf(route.template), bodyOf(route.method))
        if (anonymous.status !== 401) continue // no credential needed (e.g. a shared report link)
        const response = yield* call(base, route.method, pathOf(route.template), {
          token: owner.jwt,
          ...bodyOf(route.method)
        })
        const error = expectError(response, 403, "feature_disabled")
        expect(error.message.length).toBeGreaterThan(0)
        gatedGroups.add(route.group)
      }
      // Every gated group was refused (gateway proxy, red-team reports and all).
      expect([...gatedGroups].sort()).toEqual(Object.keys(featureOfGroup).sort())
      // Runtime keys are turned away the same way.
      const key = yield* createKey(base, owner)
      expectError(
        yield* call(base, "GET", "/v1/knowledge-sources", { token: key.plaintext_key }),
        403,
        "feature_disabled"
      )
      // Ungated groups and other workspaces are untouched.
      expectStatus(yield* call(base, "GET", "/v1/agents", { token: owner.jwt }), 200)
      expectStatus(yield* call(base, "GET", "/v1/knowledge-sources", { token: other.jwt }), 200)

      // Turning one back on reopens only its groups.
      const partly = expectStatus(
        yield* call(admin, "PATCH", features, { token: adminJwt, body: { is_knowledge_base_enabled: true } }),
        200
      )
      expect(partly).toMatchObject({
        is_attacks_enabled: false,
        is_knowledge_base_enabled: true,
        is_mcp_gateway_enabled: false
      })
      yield* reachesBase(base, owner.jwt, "/v1/knowledge-sources", 200)
      expectStatus(yield* call(base, "GET", "/v1/knowledge-sources", { token: owner.jwt }), 200)
      expectError(yield* call(base, "GET", "/v1/gateway/routes", { token: owner.jwt }), 403, "feature_disabled")
      expectError(yield* call(base, "GET", "/v1/redteam/jobs", { token: owner.jwt }), 403, "feature_disabled")

      yield* Scope.close(scope, Exit.void)
    })
  )
})
