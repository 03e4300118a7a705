/**
 * Tenant isolation over HTTP: two users, each with a workspace full of
 * environments, keys, invites and checker modes. Every by-id route of the
 * identity issue answers 404 across workspaces, changes nothing there, and
 * no list leaks the other workspace's rows.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { clientAt, expectFailure, type GuardrailClient, withRaw } from "../support/Api.js"
import { createEnvironment, createKey, INTERNAL_KEY, keyClient, tenant } from "../support/Tenants.js"
import { uniqueName } from "../support/TestPlatform.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import { answerOf, describeAnswer } from "./http-helpers.js"

/** A tenant with a second environment (with checker modes), a key bound to it, a default key and an invite. */
const populated = (base: string) =>
  Effect.gen(function* () {
    const owner = yield* tenant(base)
    const staging = yield* createEnvironment(owner, "staging")
    yield* owner.api.environments.replaceCheckerModes({
      path: { environment_id: staging.id },
      payload: { approval_checker_mode: "enforce" }
    })
    const stagingKey = yield* createKey(owner, { environment_id: staging.id })
    const defaultKey = yield* createKey(owner)
    const inviteEmail = `${uniqueName("invitee")}@example.com`
    yield* owner.api.team.createInvite({ payload: { email: inviteEmail, role: "admin" } })
    yield* owner.api.settings.updateSettings({
      payload: { default_action: "defer", config: { marker: owner.workspaceId } }
    })
    return { owner, staging, stagingKey, defaultKey, inviteEmail }
  })

type Populated = Effect.Effect.Success<ReturnType<typeof populated>>

/**
 * Everything `tenant` owns, read by its owner: used to show that nothing changed. `raw` holds the bodies as
 * sent (compared whole, and searched for the other tenant's ids: decoding would drop unnamed fields).
 */
/** A key list's body without `last_used_at`. */
const withoutLastUse = (body: unknown) =>
  JSON.parse(JSON.stringify(body), (key: string, value: unknown) => (key === "last_used_at" ? undefined : value))

const snapshot = (t: Populated) =>
  Effect.gen(function* () {
    const { api } = t.owner
    const environments = yield* withRaw(api.environments.listEnvironments({ withResponse: true }))
    const keys = yield* withRaw(api.apiKeys.listApiKeys({ withResponse: true }))
    const settings = yield* withRaw(api.settings.getSettings({ withResponse: true }))
    const members = yield* withRaw(api.team.listMembers({ urlParams: {}, withResponse: true }))
    const modes = yield* withRaw(
      api.environments.getCheckerModes({ path: { environment_id: t.staging.id }, withResponse: true })
    )
    return {
      environments: environments.value,
      keys: keys.value,
      settings: settings.value,
      members: members.value,
      modes: modes.value,
      raw: {
        environments: environments.body,
        // last_used_at moves with B's own use of its keys (flushed every 10 s), not with A's attempts.
        keys: withoutLastUse(keys.body),
        settings: settings.body,
        members: members.body,
        modes: modes.body
      }
    }
  })

const idsOf = (rows: ReadonlyArray<{ id: string }>) => rows.map((row) => row.id)

/** An error's message and details, to search for what must not leak. */
const errorText = (answer: { readonly error: { readonly message: string; readonly details?: unknown } | undefined }) =>
  `${answer.error?.message} ${JSON.stringify(answer.error?.details)}`

layer(testServer("database", { INTERNAL_API_KEY: INTERNAL_KEY }), SERVER_OPTIONS)("tenant isolation", (it) => {
  it.effect("every by-id route answers 404 with the other workspace's ids, and changes nothing there", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const a = yield* populated(base)
      const b = yield* populated(base)
      const before = yield* snapshot(b)

      const { api } = a.owner
      const otherEnvironments = [b.staging.id, b.owner.defaultEnvironmentId]
      for (const id of otherEnvironments) {
        const attempts: ReadonlyArray<readonly [string, Effect.Effect<unknown, unknown>]> = [
          [
            `PATCH /v1/environments/${id}`,
            api.environments.updateEnvironment({ path: { id }, payload: { name: "pwned", description: "pwned" } })
          ],
          [`DELETE /v1/environments/${id}`, api.environments.deleteEnvironment({ path: { id } })],
          [
            `GET /v1/environments/${id}/checker-modes`,
            api.environments.getCheckerModes({ path: { environment_id: id } })
          ],
          [
            `PUT /v1/environments/${id}/checker-modes`,
            api.environments.replaceCheckerModes({
              path: { environment_id: id },
              payload: { approval_checker_mode: "off", flow_checker_mode: "enforce" }
            })
          ]
        ]
        for (const [label, attempt] of attempts) {
          const answer = yield* answerOf(attempt, 200)
          expect(answer.status, `${label}: ${describeAnswer(answer)}`).toBe(404)
          expect(answer.error?.code).toBe("environment_not_found")
          expect(errorText(answer)).not.toContain("pwned")
        }
      }

      // Revoking the other workspace's keys: 404, nothing revoked (not even A's own key sent along).
      for (const ids of [
        [b.stagingKey.api_key.id],
        [b.defaultKey.api_key.id, b.stagingKey.api_key.id],
        [a.defaultKey.api_key.id, b.defaultKey.api_key.id]
      ]) {
        yield* expectFailure(api.apiKeys.revokeApiKeys({ payload: { ids } }), 404, "api_key_not_found")
      }
      yield* (yield* keyClient(base, b.defaultKey)).environments.listEnvironments({})
      yield* (yield* keyClient(base, a.defaultKey)).environments.listEnvironments({})

      // A key bound to the other workspace's environment cannot be created.
      yield* expectFailure(
        api.apiKeys.createApiKey({ payload: { name: "x", environment_id: b.staging.id } }),
        404,
        "environment_not_found"
      )

      // Runtime keys of A cannot reach B's environments either.
      for (const key of [a.defaultKey, a.stagingKey]) {
        yield* expectFailure(
          (yield* keyClient(base, key)).environments.getCheckerModes({ path: { environment_id: b.staging.id } }),
          404
        )
      }

      expect((yield* snapshot(b)).raw).toEqual(before.raw)
    })
  )

  it.effect("X-SERVICE-Workspace-Id of the other workspace answers 404 on every workspace route", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const a = yield* populated(base)
      const b = yield* populated(base)
      const before = yield* snapshot(b)
      const api: GuardrailClient = yield* clientAt(base, { token: a.owner.jwt, workspace: b.owner.workspaceId })
      const routes: ReadonlyArray<readonly [string, Effect.Effect<unknown, unknown>]> = [
        ["GET /v1/api-keys", api.apiKeys.listApiKeys({})],
        ["POST /v1/api-keys", api.apiKeys.createApiKey({ payload: { name: "planted" } })],
        ["PATCH /v1/api-keys/batch/revoke", api.apiKeys.revokeApiKeys({ payload: { ids: [b.defaultKey.api_key.id] } })],
        ["PATCH /v1/api-keys/batch/revoke (none)", api.apiKeys.revokeApiKeys({ payload: { ids: [] } })],
        ["GET /v1/settings", api.settings.getSettings({})],
        [
          "PATCH /v1/settings",
          api.settings.updateSettings({ payload: { default_action: "permit", config: { marker: null } } })
        ],
        ["GET /v1/environments", api.environments.listEnvironments({})],
        [
          "POST /v1/environments",
          api.environments.createEnvironment({ payload: { name: "planted", slug: "planted" } })
        ],
        [
          "PATCH /v1/environments/{id}",
          api.environments.updateEnvironment({ path: { id: b.staging.id }, payload: { name: "planted" } })
        ],
        ["DELETE /v1/environments/{id}", api.environments.deleteEnvironment({ path: { id: b.staging.id } })],
        [
          "GET /v1/environments/{id}/checker-modes",
          api.environments.getCheckerModes({ path: { environment_id: b.staging.id } })
        ],
        [
          "PUT /v1/environments/{id}/checker-modes",
          api.environments.replaceCheckerModes({ path: { environment_id: b.staging.id }, payload: {} })
        ],
        ["GET /v1/team/members", api.team.listMembers({ urlParams: {} })],
        ["POST /v1/team/invites", api.team.createInvite({ payload: { email: "planted@example.com", role: "owner" } })],
        ["POST /v1/team/my-workspaces", api.team.createWorkspace({ payload: { name: "planted" } })]
      ]
      for (const [label, attempt] of routes) {
        const answer = yield* answerOf(attempt, 200)
        expect(answer.status, `${label}: ${describeAnswer(answer)}`).toBe(404)
        expect(answer.error?.code).toBe("workspace_not_found")
        expect(errorText(answer)).not.toContain(b.defaultKey.api_key.prefix)
      }
      expect((yield* snapshot(b)).raw).toEqual(before.raw)
    })
  )

  it.effect("lists never leak: api keys, environments, members, invites, settings, my-workspaces", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const a = yield* populated(base)
      const b = yield* populated(base)
      const check = (me: Populated, other: Populated) =>
        Effect.gen(function* () {
          const mine = yield* snapshot(me)
          const text = JSON.stringify(mine.raw)
          expect(idsOf(mine.keys.api_keys).sort()).toEqual([me.defaultKey.api_key.id, me.stagingKey.api_key.id].sort())
          expect(idsOf(mine.environments.environments).sort()).toEqual(
            [me.owner.defaultEnvironmentId, me.staging.id].sort()
          )
          expect(mine.members.members.map((m) => m.user_id)).toEqual([me.owner.user_id])
          expect(mine.members.invites.map((i) => i.email)).toEqual([me.inviteEmail])
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
          const viaKey = yield* (yield* keyClient(base, me.stagingKey)).environments.listEnvironments({})
          expect(idsOf(viaKey.environments).sort()).toEqual([me.owner.defaultEnvironmentId, me.staging.id].sort())
          // my-workspaces lists only the user's own.
          const workspaces = yield* me.owner.api.team.listMyWorkspaces({
            headers: { "x-service-user-id": me.owner.user_id }
          })
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
      const both = yield* tenant(base)
      const email = `${uniqueName("both")}@example.com`
      for (const t of [a, b]) {
        yield* t.owner.api.team.createInvite({ payload: { email, role: "admin" } })
      }
      const internal = yield* clientAt(base, { token: INTERNAL_KEY })
      const joined = yield* internal.team.listMyWorkspaces({
        headers: { "x-service-user-id": both.user_id, "x-service-user-email": email }
      })
      expect(idsOf(joined.workspaces).sort()).toEqual(
        [both.workspaceId, a.owner.workspaceId, b.owner.workspaceId].sort()
      )
      for (const [me, other] of [
        [a, b],
        [b, a]
      ] as const) {
        const there = yield* clientAt(base, { token: both.jwt, workspace: me.owner.workspaceId })
        const keys = yield* there.apiKeys.listApiKeys({})
        expect(idsOf(keys.api_keys).sort()).toEqual([me.defaultKey.api_key.id, me.stagingKey.api_key.id].sort())
        const environments = yield* there.environments.listEnvironments({})
        expect(idsOf(environments.environments)).not.toContain(other.staging.id)
        // By-id routes still check the selected workspace: the other's environment is 404 here.
        yield* expectFailure(there.environments.getCheckerModes({ path: { environment_id: other.staging.id } }), 404)
        yield* expectFailure(there.apiKeys.revokeApiKeys({ payload: { ids: [other.defaultKey.api_key.id] } }), 404)
      }
      // Without the header: the user's own default workspace, none of theirs.
      const own = yield* both.api.environments.listEnvironments({})
      expect(idsOf(own.environments)).toEqual([both.defaultEnvironmentId])
    })
  )
})
