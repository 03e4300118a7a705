/**
 * Workspace feature flags: a platform admin (PLATFORM_ADMIN_USER_IDS) turns
 * them off and on through the admin extension; while off, every
 * authenticated endpoint of the red-team, knowledge-source and gateway
 * groups answers 403 `feature_disabled` for that workspace only.
 */
import { expect, layer } from "@effect/vitest"
import { HttpServer } from "@effect/platform"
import { Cause, Context, Effect, Exit, Layer, Option, Scope } from "effect"
import { GuardrailApi } from "../../src/Api.js"
import { featureOfGroup } from "../../src/identity/FeatureFlags.js"
import { isHttpError, statusOf } from "../../src/http/Errors.js"
import { makeRouteTable } from "../../src/http/Routes.js"
import { expectErrorShape } from "../catalog/catalog-helpers.js"
import { clientAt, expectFailure } from "../support/Api.js"
import { eventually } from "../support/Eventually.js"
import { call, expectError, expectValidation, isErrorBody } from "../support/Raw.js"
import { createKey, keyClient, signUp, tenant } from "../support/Tenants.js"
import {
  baseUrl,
  SERVER_OPTIONS,
  TestDatabaseUrl,
  testServerOver,
  testServerWithDatabase
} from "../support/TestServer.js"

const gatedRoutes = makeRouteTable(GuardrailApi).filter((route) => featureOfGroup[route.group] !== undefined)
const pathOf = (template: string) => template.replace(/:[A-Za-z_]+/g, "x")
const JWT_SECRET = "feature-flags-test-secret-0123456789abcdef0123456789"
/** The status a call answered: 200 for a success (the routes polled here declare no other), else its HTTP error's. */
const statusOfCall = <A, E>(request: Effect.Effect<A, E>) =>
  Effect.map(Effect.exit(request), (exit) =>
    Exit.isSuccess(exit)
      ? 200
      : Option.match(Cause.failureOption(exit.cause), {
          onNone: () => 0,
          onSome: (error) => (isHttpError(error) ? statusOf(error) : 0)
        })
  )
/** Waits until `request` to the other instance answers `status`: the change notice has arrived (however loaded the machine). */
const reaches = <A, E>(request: Effect.Effect<A, E>, status: number) =>
  eventually(
    Effect.flatMap(statusOfCall(request), (actual) =>
      actual === status ? Effect.void : Effect.fail(`still ${actual}`)
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
      const adminApi = yield* clientAt(admin, { token: platformAdmin.jwt })
      const features = { path: { id: owner.workspaceId } }

      // Defaults: every feature on.
      expect(yield* adminApi.admin.getWorkspaceFeatures(features)).toEqual({
        workspace_id: owner.workspaceId,
        is_attacks_enabled: true,
        is_knowledge_base_enabled: true,
        is_mcp_gateway_enabled: true
      })
      expect(gatedRoutes.length).toBeGreaterThanOrEqual(10)
      // Raw: every route of the gated groups, with placeholder ids and empty bodies.
      for (const route of gatedRoutes) {
        const response = yield* call(base, route.method, pathOf(route.template), {
          token: owner.jwt,
          ...bodyOf(route.method)
        })
        const code = isErrorBody(response.body) ? response.body.error.code : undefined
        expect(code, `${route.method} ${route.template}`).not.toBe("feature_disabled")
      }

      // Only a platform admin may read or set them; a workspace owner may not, even for their own workspace.
      yield* expectFailure(
        owner.api.admin.updateWorkspaceFeatures({ ...features, payload: { is_attacks_enabled: false } }),
        403,
        "platform_admin_required"
      )
      const ownerAtAdmin = yield* clientAt(admin, { token: owner.jwt })
      yield* expectFailure(ownerAtAdmin.admin.getWorkspaceFeatures(features), 403, "platform_admin_required")
      const anonymousAtAdmin = yield* clientAt(admin)
      expectErrorShape(yield* expectFailure(anonymousAtAdmin.admin.getWorkspaceFeatures(features), 401))
      // Raw: a body the contract's schema refuses.
      const invalid = yield* call(admin, "PATCH", `/v1/admin/workspaces/${owner.workspaceId}/features`, {
        token: platformAdmin.jwt,
        body: { is_attacks_enabled: "no" }
      })
      expectValidation(invalid, "is_attacks_enabled")
      yield* expectFailure(
        adminApi.admin.getWorkspaceFeatures({ path: { id: "ws_missing" } }),
        404,
        "workspace_not_found"
      )

      const off = yield* adminApi.admin.updateWorkspaceFeatures({
        ...features,
        payload: { is_attacks_enabled: false, is_knowledge_base_enabled: false, is_mcp_gateway_enabled: false }
      })
      expect(off).toEqual({
        workspace_id: owner.workspaceId,
        is_attacks_enabled: false,
        is_knowledge_base_enabled: false,
        is_mcp_gateway_enabled: false
      })
      const mine = yield* owner.api.team.listMyWorkspaces({ headers: { "x-service-user-id": owner.user_id } })
      expect(mine.workspaces[0]).toMatchObject({ is_attacks_enabled: false, is_knowledge_base_enabled: false })
      // The base instance cached the flags as on (every gated route answered above); the admin
      // instance's change notice (PostgreSQL NOTIFY) drops that entry within moments.
      yield* reaches(owner.api.gatewayRoutes.listGatewayRoutes(), 403)

      // Every authenticated endpoint of a gated group answers 403 feature_disabled (public share links excepted).
      const gatedGroups = new Set<string>()
      // Raw: every route of the gated groups, with placeholder ids and empty bodies.
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
      const key = yield* keyClient(base, yield* createKey(owner))
      yield* expectFailure(key.knowledgeSources.listKnowledgeSources({ urlParams: {} }), 403, "feature_disabled")
      // Ungated groups and other workspaces are untouched.
      yield* owner.api.agents.listAgents()
      yield* other.api.knowledgeSources.listKnowledgeSources({ urlParams: {} })

      // Turning one back on reopens only its groups.
      const partly = yield* adminApi.admin.updateWorkspaceFeatures({
        ...features,
        payload: { is_knowledge_base_enabled: true }
      })
      expect(partly).toMatchObject({
        is_attacks_enabled: false,
        is_knowledge_base_enabled: true,
        is_mcp_gateway_enabled: false
      })
      yield* reaches(owner.api.knowledgeSources.listKnowledgeSources({ urlParams: {} }), 200)
      yield* owner.api.knowledgeSources.listKnowledgeSources({ urlParams: {} })
      yield* expectFailure(owner.api.gatewayRoutes.listGatewayRoutes(), 403, "feature_disabled")
      yield* expectFailure(owner.api.redteam.listJobs({ urlParams: {} }), 403, "feature_disabled")

      yield* Scope.close(scope, Exit.void)
    })
  )
})
