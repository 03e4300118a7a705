/**
 * Tenant isolation over HTTP: two users, each with a workspace full of
 * environments, keys, invites and checker modes. Every by-id route of the
 * identity issue answers 404 across workspaces, changes nothing there, and
 * no list leaks the other workspace's rows.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { uniqueName } from "../support/TestPlatform.js"
import { baseUrl, testServer } from "../support/TestServer.js"
import {
  call,
  createEnvironment,
  createKey,
  expectError,
  expectStatus,
  INTERNAL_KEY,
  SERVER_OPTIONS,
  tenant,
  type Tenant
} from "./http-helpers.js"

/** A tenant with a second environment (with checker modes), a key bound to it, a default key and an invite. */
const populated = (base: string) =>
  Effect.gen(function* () {
    const owner = yield* tenant(base)
    const staging = yield* createEnvironment(base, owner, "staging")
    expectStatus(
      yield* call(base, "PUT", `/v1/environments/${staging.id}/checker-modes`, {
        token: owner.jwt,
        body: { approval_checker_mode: "enforce" }
      }),
      200
    )
    const stagingKey = yield* createKey(base, owner, { environment_id: staging.id })
    const defaultKey = yield* createKey(base, owner)
    const inviteEmail = `${uniqueName("invitee")}@example.com`
    expectStatus(
      yield* call(base, "POST", "/v1/team/invites", { token: owner.jwt, body: { email: inviteEmail, role: "admin" } }),
      201
    )
    expectStatus(
      yield* call(base, "PATCH", "/v1/settings", {
        token: owner.jwt,
        body: { default_action: "defer", config: { marker: owner.workspaceId } }
      }),
      200
    )
    return { owner, staging, stagingKey, defaultKey, inviteEmail }
  })

type Populated = Effect.Effect.Success<ReturnType<typeof populated>>

/** Everything `tenant` owns, read by its owner: used to show that nothing changed. */
const snapshot = (base: string, t: Populated) =>
  Effect.gen(function* () {
    const token = t.owner.jwt
    return {
      environments: expectStatus(yield* call(base, "GET", "/v1/environments", { token }), 200),
      keys: expectStatus(yield* call(base, "GET", "/v1/api-keys", { token }), 200),
      settings: expectStatus(yield* call(base, "GET", "/v1/settings", { token }), 200),
      members: expectStatus(yield* call(base, "GET", "/v1/team/members", { token }), 200),
      modes: expectStatus(yield* call(base, "GET", `/v1/environments/${t.staging.id}/checker-modes`, { token }), 200)
    }
  })

const idsOf = (rows: ReadonlyArray<{ id: string }>) => rows.map((row) => row.id)

layer(testServer("database", { INTERNAL_API_KEY: INTERNAL_KEY }), SERVER_OPTIONS)("tenant isolation", (it) => {
  it.effect("every by-id route answers 404 with the other workspace's ids, and changes nothing there", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const a = yield* populated(base)
      const b = yield* populated(base)
      const before = yield* snapshot(base, b)

      const token = a.owner.jwt
      const otherEnvironments = [b.staging.id, b.owner.defaultEnvironmentId]
      for (const id of otherEnvironments) {
        const attempts: ReadonlyArray<readonly [string, string, unknown?]> = [
          ["PATCH", `/v1/environments/${id}`, { name: "pwned", description: "pwned" }],
          ["DELETE", `/v1/environments/${id}`],
          ["GET", `/v1/environments/${id}/checker-modes`],
          [
            "PUT",
            `/v1/environments/${id}/checker-modes`,
            { approval_checker_mode: "off", flow_checker_mode: "enforce" }
          ]
        ]
        for (const [method, path, body] of attempts) {
          const response = yield* call(base, method, path, { token, body })
          expect(response.status, `${method} ${path}: ${response.text}`).toBe(404)
          expectError(response, 404, "environment_not_found")
          expect(response.text).not.toContain("pwned")
        }
      }

      // Revoking the other workspace's keys: 404, nothing revoked (not even A's own key sent along).
      for (const ids of [
        [b.stagingKey.api_key.id],
        [b.defaultKey.api_key.id, b.stagingKey.api_key.id],
        [a.defaultKey.api_key.id, b.defaultKey.api_key.id]
      ]) {
        const response = yield* call(base, "PATCH", "/v1/api-keys/batch/revoke", { token, body: { ids } })
        expectError(response, 404, "api_key_not_found")
      }
      expectStatus(yield* call(base, "GET", "/v1/environments", { token: b.defaultKey.plaintext_key }), 200)
      expectStatus(yield* call(base, "GET", "/v1/environments", { token: a.defaultKey.plaintext_key }), 200)

      // A key bound to the other workspace's environment cannot be created.
      expectError(
        yield* call(base, "POST", "/v1/api-keys", { token, body: { name: "x", environment_id: b.staging.id } }),
        404,
        "environment_not_found"
      )

      // Runtime keys of A cannot reach B's environments either.
      for (const key of [a.defaultKey, a.stagingKey]) {
        expectError(
          yield* call(base, "GET", `/v1/environments/${b.staging.id}/checker-modes`, { token: key.plaintext_key }),
          404
        )
      }

      expect(yield* snapshot(base, b)).toEqual(before)
    })
  )

  it.effect("X-SERVICE-Workspace-Id of the other workspace answers 404 on every workspace route", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const a = yield* populated(base)
      const b = yield* populated(base)
      const before = yield* snapshot(base, b)
      const routes: ReadonlyArray<readonly [string, string, unknown?]> = [
        ["GET", "/v1/api-keys"],
        ["POST", "/v1/api-keys", { name: "planted" }],
        ["PATCH", "/v1/api-keys/batch/revoke", { ids: [b.defaultKey.api_key.id] }],
        ["PATCH", "/v1/api-keys/batch/revoke", { ids: [] }],
        ["GET", "/v1/settings"],
        ["PATCH", "/v1/settings", { default_action: "permit", config: { marker: null } }],
        ["GET", "/v1/environments"],
        ["POST", "/v1/environments", { name: "planted", slug: "planted" }],
        ["PATCH", `/v1/environments/${b.staging.id}`, { name: "planted" }],
        ["DELETE", `/v1/environments/${b.staging.id}`],
        ["GET", `/v1/environments/${b.staging.id}/checker-modes`],
        ["PUT", `/v1/environments/${b.staging.id}/checker-modes`, {}],
        ["GET", "/v1/team/members"],
        ["POST", "/v1/team/invites", { email: "planted@example.com", role: "owner" }],
        ["POST", "/v1/team/my-workspaces", { name: "planted" }]
      ]
      for (const [method, path, body] of routes) {
        const response = yield* call(base, method, path, { token: a.owner.jwt, workspace: b.owner.workspaceId, body })
        expect(response.status, `${method} ${path}: ${response.text}`).toBe(404)
        expectError(response, 404, "workspace_not_found")
        expect(response.text).not.toContain(b.defaultKey.api_key.prefix)
      }
      expect(yield* snapshot(base, b)).toEqual(before)
    })
  )

  it.effect("lists never leak: api keys, environments, members, invites, settings, my-workspaces", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const a = yield* populated(base)
      const b = yield* populated(base)
      const check = (me: Populated, other: Populated) =>
        Effect.gen(function* () {
          const mine = yield* snapshot(base, me)
          const text = JSON.stringify(mine)
          expect(idsOf(mine.keys.api_keys).sort()).toEqual([me.defaultKey.api_key.id, me.stagingKey.api_key.id].sort())
          expect(idsOf(mine.environments.environments).sort()).toEqual(
            [me.owner.defaultEnvironmentId, me.staging.id].sort()
          )
          expect(mine.members.members.map((m: { user_id: string }) => m.user_id)).toEqual([me.owner.user_id])
          expect(mine.members.invites.map((i: { email: string }) => i.email)).toEqual([me.inviteEmail])
          expect(mine.settings.config).toEqual({ marker: me.owner.workspaceId })
          for (const leak of [
            other.owner.workspaceId,
            other.owner.user_id,
            other.owner.username,
            other.staging.id,
            other.owner.defaultEnvironmentId,
            other.defaultKey.api_key.id,
            other.stagingKey.api_key.id,
            other.inviteEmail
          ]) {
            expect(text).not.toContain(leak)
          }
          // Through a runtime key as well.
          const viaKey = expectStatus(
            yield* call(base, "GET", "/v1/environments", { token: me.stagingKey.plaintext_key }),
            200
          )
          expect(idsOf(viaKey.environments).sort()).toEqual([me.owner.defaultEnvironmentId, me.staging.id].sort())
          // my-workspaces lists only the user's own.
          const workspaces = expectStatus(
            yield* call(base, "GET", "/v1/team/my-workspaces", {
              token: me.owner.jwt,
              headers: { "x-service-user-id": me.owner.user_id }
            }),
            200
          )
          expect(idsOf(workspaces.workspaces)).toEqual([me.owner.workspaceId])
        })
      yield* check(a, b)
      yield* check(b, a)
    })
  )

  it.effect("a user invited into both sees each workspace's rows only under that workspace", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const a = yield* populated(base)
      const b = yield* populated(base)
      const both: Tenant = yield* tenant(base)
      const email = `${uniqueName("both")}@example.com`
      for (const t of [a, b]) {
        expectStatus(
          yield* call(base, "POST", "/v1/team/invites", { token: t.owner.jwt, body: { email, role: "admin" } }),
          201
        )
      }
      const joined = expectStatus(
        yield* call(base, "GET", "/v1/team/my-workspaces", {
          token: INTERNAL_KEY,
          headers: { "x-service-user-id": both.user_id, "x-service-user-email": email }
        }),
        200
      )
      expect(idsOf(joined.workspaces).sort()).toEqual(
        [both.workspaceId, a.owner.workspaceId, b.owner.workspaceId].sort()
      )
      for (const [me, other] of [
        [a, b],
        [b, a]
      ] as const) {
        const keys = expectStatus(
          yield* call(base, "GET", "/v1/api-keys", { token: both.jwt, workspace: me.owner.workspaceId }),
          200
        )
        expect(idsOf(keys.api_keys).sort()).toEqual([me.defaultKey.api_key.id, me.stagingKey.api_key.id].sort())
        const environments = expectStatus(
          yield* call(base, "GET", "/v1/environments", { token: both.jwt, workspace: me.owner.workspaceId }),
          200
        )
        expect(idsOf(environments.environments)).not.toContain(other.staging.id)
        // By-id routes still check the selected workspace: the other's environment is 404 here.
        expectError(
          yield* call(base, "GET", `/v1/environments/${other.staging.id}/checker-modes`, {
            token: both.jwt,
            workspace: me.owner.workspaceId
          }),
          404
        )
        expectError(
          yield* call(base, "PATCH", "/v1/api-keys/batch/revoke", {
            token: both.jwt,
            workspace: me.owner.workspaceId,
            body: { ids: [other.defaultKey.api_key.id] }
          }),
          404
        )
      }
      // Without the header: the user's own default workspace, none of theirs.
      const own = expectStatus(yield* call(base, "GET", "/v1/environments", { token: both.jwt }), 200)
      expect(idsOf(own.environments)).toEqual([both.defaultEnvironmentId])
    })
  )
})
