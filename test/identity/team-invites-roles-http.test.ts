/**
 * Team over HTTP against the real service and PostgreSQL: invites and
 * members, credentials, what each role may call, and `is_platform_admin`
 * from PLATFORM_ADMIN_USER_IDS (a second server over the same database).
 * My-workspaces and creating workspaces are in
 * team-my-workspaces-http.test.ts.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Context, Effect, Layer, Schema } from "effect"
import { HttpServer } from "@effect/platform"
import { randomUUID } from "node:crypto"
import { Invite } from "../../src/identity/Domain.js"
import { clientAt, expectFailure, withRaw } from "../support/Api.js"
import { call, expectError, expectValidation } from "../support/Raw.js"
import { createEnvironment, createKey, INTERNAL_KEY, joinedAs, signUp, tenant } from "../support/Tenants.js"
import { uniqueName } from "../support/TestPlatform.js"
import {
  baseUrl,
  SERVER_OPTIONS,
  TestDatabaseUrl,
  testServerOver,
  testServerWithDatabase
} from "../support/TestServer.js"
import { answerOf, describeAnswer } from "./http-helpers.js"
import { TIMESTAMP } from "../support/Formats.js"
import { config, members, myWorkspaces } from "./team-support.js"

layer(testServerWithDatabase("database", config), SERVER_OPTIONS)("team over HTTP", (it) => {
  describe("POST /v1/team/invites and GET /v1/team/members", () => {
    it.effect(
      "an owner invites (201, email lower-cased, role default member) and members lists members and invites",
      () =>
        Effect.gen(function* () {
          const base = yield* baseUrl
          const owner = yield* tenant(base)
          const email = `${uniqueName("New.Hire")}@Example.COM`
          // Raw: without a role, to see the default; the client always sends one.
          const response = yield* call(base, "POST", "/v1/team/invites", { token: owner.jwt, body: { email } })
          expect(response.status, response.text).toBe(201)
          const created = Schema.decodeUnknownSync(Invite)(response.body)
          expect(created).toMatchObject({
            workspace_id: owner.workspaceId,
            email: email.toLowerCase(),
            role: "member",
            status: "pending"
          })
          expect(typeof created.id).toBe("string")
          expect(created.created_at).toMatch(TIMESTAMP)

          // The members as sent, compared whole: decoding would drop any field the contract does not name.
          const { body: team } = yield* withRaw(owner.api.team.listMembers({ urlParams: {}, withResponse: true }))
          expect((team as { members: unknown }).members).toEqual([
            {
              user_id: owner.user_id,
              username: owner.username,
              role: "owner",
              joined_at: expect.stringMatching(TIMESTAMP)
            }
          ])
          expect((team as { invites: unknown }).invites).toEqual([
            expect.objectContaining({ id: created.id, status: "pending" })
          ])
        })
    )

    // Raw: bodies the schema refuses and a wrong media type.
    it.effect("a bad email or role answers 400 naming it; a wrong content type 415", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const path = "/v1/team/invites"
        for (const email of ["", "no-at-sign", "two words@example.com", 5]) {
          expectValidation(yield* call(base, "POST", path, { token: owner.jwt, body: { email } }), "email")
        }
        expectValidation(yield* call(base, "POST", path, { token: owner.jwt, body: {} }), "email")
        expectValidation(
          yield* call(base, "POST", path, { token: owner.jwt, body: { email: "a@b.co", role: "superuser" } }),
          "role"
        )
        expectError(
          yield* call(base, "POST", path, {
            token: owner.jwt,
            raw: JSON.stringify({ email: "a@b.co" }),
            contentType: "text/plain"
          }),
          415,
          "unsupported_media_type"
        )
        expect((yield* members(owner)).invites).toEqual([])
      })
    )
  })

  describe("credentials", () => {
    it.effect("without a credential the team endpoints answer 401", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const anonymous = yield* clientAt(base)
        yield* expectFailure(anonymous.team.listMembers({ urlParams: {} }), 401)
        yield* expectFailure(anonymous.team.createInvite({ payload: { email: "a@b.co", role: "member" } }), 401)
        yield* expectFailure(anonymous.team.createWorkspace({ payload: { name: "x" } }), 401)
        yield* expectFailure(myWorkspaces(base, randomUUID()), 401)
      })
    )
  })

  describe("roles", () => {
    it.effect("a member reads but cannot manage keys, settings, environments or invites (403)", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const staging = yield* createEnvironment(owner)
        const key = yield* createKey(owner)
        const member = yield* joinedAs(base, owner, "member")
        // Acts in the owner's workspace.
        const { api } = member

        const allowed: ReadonlyArray<readonly [string, Effect.Effect<unknown, unknown>]> = [
          ["GET /v1/settings", api.settings.getSettings({})],
          ["GET /v1/environments", api.environments.listEnvironments({})],
          [
            "GET /v1/environments/{id}/checker-modes",
            api.environments.getCheckerModes({ path: { environment_id: staging.id } })
          ],
          ["GET /v1/team/members", api.team.listMembers({ urlParams: {} })]
        ]
        for (const [label, attempt] of allowed) {
          const answer = yield* answerOf(attempt, 200)
          expect(answer.status, `${label}: ${describeAnswer(answer)}`).toBe(200)
        }
        const forbidden: ReadonlyArray<readonly [string, Effect.Effect<unknown, unknown>]> = [
          ["GET /v1/api-keys", api.apiKeys.listApiKeys({})],
          ["POST /v1/api-keys", api.apiKeys.createApiKey({ payload: { name: "member key" } })],
          ["PATCH /v1/api-keys/batch/revoke", api.apiKeys.revokeApiKeys({ payload: { ids: [key.api_key.id] } })],
          ["PATCH /v1/settings", api.settings.updateSettings({ payload: { default_action: "deny" } })],
          ["PATCH /v1/settings {}", api.settings.updateSettings({ payload: {} })],
          ["POST /v1/environments", api.environments.createEnvironment({ payload: { name: "m", slug: "member-env" } })],
          [
            "PATCH /v1/environments/{id}",
            api.environments.updateEnvironment({ path: { id: staging.id }, payload: { name: "renamed" } })
          ],
          ["DELETE /v1/environments/{id}", api.environments.deleteEnvironment({ path: { id: staging.id } })],
          [
            "PUT /v1/environments/{id}/checker-modes",
            api.environments.replaceCheckerModes({
              path: { environment_id: staging.id },
              payload: { approval_checker_mode: "enforce" }
            })
          ],
          ["POST /v1/team/invites", api.team.createInvite({ payload: { email: "friend@example.com", role: "owner" } })]
        ]
        for (const [label, attempt] of forbidden) {
          const answer = yield* answerOf(attempt, 200)
          expect(answer.status, `${label}: ${describeAnswer(answer)}`).toBe(403)
          expect(answer.error?.code).toBe("insufficient_role")
        }
        // Nothing changed.
        const settings = yield* owner.api.settings.getSettings({})
        expect(settings.default_action).toBe("permit")
        const keys = yield* owner.api.apiKeys.listApiKeys({})
        expect(keys.api_keys.map((k) => k.status)).toEqual(["active"])
        expect((yield* members(owner)).invites.map((i) => i.email)).not.toContain("friend@example.com")
        // In its own personal workspace the member is the owner.
        const own = yield* clientAt(base, { token: member.jwt })
        yield* own.apiKeys.listApiKeys({})
        // And may create workspaces of its own.
        yield* own.team.createWorkspace({ payload: { name: "Mine" } })
      })
    )

    it.effect("an admin manages keys, settings, environments and invites", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const admin = yield* joinedAs(base, owner, "admin")
        // Acts in the owner's workspace.
        const { api } = admin
        yield* api.apiKeys.listApiKeys({})
        const key = yield* api.apiKeys.createApiKey({ payload: { name: "admin key" } })
        expect(key.api_key.created_by).toBe(admin.user_id)
        yield* api.settings.updateSettings({ payload: { default_action: "defer" } })
        const environment = yield* api.environments.createEnvironment({ payload: { name: "QA", slug: "qa" } })
        yield* api.environments.replaceCheckerModes({
          path: { environment_id: environment.id },
          payload: { flow_checker_mode: "observe" }
        })
        yield* api.team.createInvite({ payload: { email: `${uniqueName("x")}@example.com`, role: "member" } })
        // The owner sees the admin's changes.
        const settings = yield* owner.api.settings.getSettings({})
        expect(settings.default_action).toBe("defer")
      })
    )
  })

  describe("is_platform_admin", () => {
    it.scoped("is true for the user ids in PLATFORM_ADMIN_USER_IDS (second server over the same database)", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const db = yield* TestDatabaseUrl
        const admin = yield* signUp(base)
        const plain = yield* signUp(base)
        expect((yield* myWorkspaces(base, admin.user_id, { token: admin.jwt })).is_platform_admin).toBe(false)

        const context = yield* Layer.build(
          testServerOver("database", db, {
            INTERNAL_API_KEY: INTERNAL_KEY,
            PLATFORM_ADMIN_USER_IDS: ` ${randomUUID()}, ${admin.user_id} ,`
          })
        )
        const server = Context.get(context, HttpServer.HttpServer)
        const address = server.address
        expect(address._tag).toBe("TcpAddress")
        const baseB = `http://127.0.0.1:${address._tag === "TcpAddress" ? address.port : 0}`

        // Sessions of server B (its JWT secret is its own): log in there.
        const anonymousB = yield* clientAt(baseB)
        const adminB = yield* anonymousB.auth.login({ payload: { username: admin.username, password: admin.password } })
        const plainB = yield* anonymousB.auth.login({ payload: { username: plain.username, password: plain.password } })
        const asAdmin = yield* myWorkspaces(baseB, admin.user_id, { token: adminB.jwt })
        expect(asAdmin.is_platform_admin).toBe(true)
        expect(asAdmin.workspaces).toHaveLength(1)
        const asPlain = yield* myWorkspaces(baseB, plain.user_id, { token: plainB.jwt })
        expect(asPlain.is_platform_admin).toBe(false)
        // Through the internal key too.
        const viaInternal = yield* myWorkspaces(baseB, admin.user_id, { token: INTERNAL_KEY })
        expect(viaInternal.is_platform_admin).toBe(true)
      })
    )
  })
})
