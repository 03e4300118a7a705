/**
 * Team over HTTP against the real service and PostgreSQL: my-workspaces
 * (who may ask, invites accepted in the same answer) and creating
 * workspaces. Invites and members, what each role may call, and
 * `is_platform_admin` are in team-invites-roles-http.test.ts.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { randomUUID } from "node:crypto"
import { WorkspaceMembership } from "../../src/identity/Domain.js"
import { clientAt, expectFailure, type GuardrailClient, withRaw } from "../support/Api.js"
import { call, expectError, expectValidation } from "../support/Raw.js"
import { createKey, INTERNAL_KEY, oauthSession, sha256Hex, signUp, tenant } from "../support/Tenants.js"
import { uniqueName } from "../support/TestPlatform.js"
import { baseUrl, SERVER_OPTIONS, testServerWithDatabase } from "../support/TestServer.js"
import { answerOf, describeAnswer } from "./http-helpers.js"
import { config, members, myWorkspaces } from "./team-support.js"

/**
 * POST /v1/team/invites. The client always sends a role (the contract's default applies on the server's
 * side only), so `member` stands for "no role given" here; the test of the default sends its body raw.
 */
const invite = (
  owner: { readonly api: GuardrailClient },
  email: string,
  role: "owner" | "admin" | "member" = "member"
) => owner.api.team.createInvite({ payload: { email, role } })

const expectMembership = (membership: WorkspaceMembership) => {
  expect(typeof membership.id).toBe("string")
  expect(typeof membership.name).toBe("string")
  expect(typeof membership.slug).toBe("string")
  expect(typeof membership.organization_id).toBe("string")
  expect(["owner", "admin", "member"]).toContain(membership.role)
  expect(typeof membership.is_attacks_enabled).toBe("boolean")
  expect(typeof membership.is_knowledge_base_enabled).toBe("boolean")
  expect(typeof membership.is_mcp_gateway_enabled).toBe("boolean")
}

layer(testServerWithDatabase("database", config), SERVER_OPTIONS)("team over HTTP", (it) => {
  describe("GET /v1/team/my-workspaces", () => {
    it.effect("a session whose sub is X-SERVICE-User-Id gets its workspaces and is_platform_admin false", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const user = yield* tenant(base)
        const { body: sent, value: body } = yield* withRaw(
          user.api.team.listMyWorkspaces({ headers: { "x-service-user-id": user.user_id }, withResponse: true })
        )
        // The body as sent: decoding would drop any field the contract does not name.
        expect(Object.keys(sent as object).sort()).toEqual(["is_platform_admin", "workspaces"])
        expect(body.is_platform_admin).toBe(false)
        expect(body.workspaces).toHaveLength(1)
        expectMembership(body.workspaces[0]!)
        expect(body.workspaces[0]).toMatchObject({
          id: user.workspaceId,
          organization_id: user.organizationId,
          role: "owner"
        })
        // An upper-case UUID is the same user.
        const upper = yield* myWorkspaces(base, user.user_id.toUpperCase(), { token: user.jwt })
        expect(upper.workspaces).toEqual(body.workspaces)
      })
    )

    it.effect("the internal key may ask for any user", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const user = yield* tenant(base)
        const body = yield* myWorkspaces(base, user.user_id, { token: INTERNAL_KEY })
        expect(body.workspaces.map((w) => w.id)).toEqual([user.workspaceId])
        expect(body.is_platform_admin).toBe(false)
      })
    )

    it.effect("another user's session, a runtime key, garbage or no credential answer 401/403", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const user = yield* tenant(base)
        const other = yield* signUp(base)
        const key = yield* createKey(user)
        for (const token of [other.jwt, key.plaintext_key, "garbage", `${INTERNAL_KEY}x`, undefined]) {
          const answer = yield* answerOf(myWorkspaces(base, user.user_id, { token }), 200)
          expect([401, 403], `${String(token).slice(0, 12)}: ${describeAnswer(answer)}`).toContain(answer.status)
          expect(`${answer.error?.message} ${JSON.stringify(answer.error?.details)}`).not.toContain(user.workspaceId)
        }
        // A session after a password change: the old one is over.
        const changed = yield* (yield* clientAt(base)).auth.changePassword({
          payload: { username: user.username, current_password: user.password, new_password: sha256Hex("new") }
        })
        yield* expectFailure(myWorkspaces(base, user.user_id, { token: user.jwt }), 401)
        yield* myWorkspaces(base, user.user_id, { token: changed.jwt })
      })
    )

    // Raw: the client itself refuses to send a missing or non-UUID header the contract requires.
    it.effect("a missing or non-UUID X-SERVICE-User-Id answers 400 naming the header", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const user = yield* signUp(base)
        const missing = yield* call(base, "GET", "/v1/team/my-workspaces", { token: user.jwt })
        expectValidation(missing, "x-service-user-id")
        for (const id of ["not-a-uuid", "123", `${user.user_id}0`]) {
          expectValidation(
            yield* call(base, "GET", "/v1/team/my-workspaces", {
              token: user.jwt,
              headers: { "x-service-user-id": id }
            }),
            "x-service-user-id"
          )
        }
      })
    )

    it.effect("pending invites for X-SERVICE-User-Email are accepted in the same answer (session path)", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const alice = yield* tenant(base)
        const carol = yield* tenant(base)
        const email = `${uniqueName("Eve")}@Example.com`
        const fromAlice = yield* invite(alice, email, "admin")
        expect(fromAlice).toMatchObject({ email: email.toLowerCase(), role: "admin", status: "pending" })
        yield* invite(carol, email.toUpperCase(), "member")
        // Eve signs in through OAuth with that email (any case).
        const eve = yield* oauthSession(base, { email, provider: "google", provider_subject: randomUUID() })

        const first = yield* myWorkspaces(base, eve.user_id, { token: eve.jwt, email: email.toLowerCase() })
        for (const membership of first.workspaces) expectMembership(membership)
        const roles = Object.fromEntries(first.workspaces.map((w) => [w.id, w.role]))
        expect(roles[alice.workspaceId]).toBe("admin")
        expect(roles[carol.workspaceId]).toBe("member")
        expect(first.workspaces).toHaveLength(3)

        // Again: nothing new, nothing doubled.
        const second = yield* myWorkspaces(base, eve.user_id, { token: eve.jwt, email })
        expect(second.workspaces.map((w) => w.id).sort()).toEqual(first.workspaces.map((w) => w.id).sort())

        // The inviting workspace sees Eve as admin; the accepted invite is no longer listed (only pending ones are).
        const team = yield* members(alice)
        expect(team.invites.map((i) => i.id)).not.toContain(fromAlice.id)
        expect(team.members.find((m) => m.user_id === eve.user_id)?.role).toBe("admin")
        // Eve can now work in Alice's workspace with the header.
        yield* (yield* clientAt(base, { token: eve.jwt, workspace: alice.workspaceId })).apiKeys.listApiKeys({})
      })
    )

    it.effect(
      "a second invite to one address replaces the pending one: the person joins with the role invited last",
      () =>
        Effect.gen(function* () {
          const base = yield* baseUrl
          const alice = yield* tenant(base)
          const email = `${uniqueName("Dan")}@example.com`
          yield* invite(alice, email, "member")
          const asAdmin = yield* invite(alice, email.toUpperCase(), "admin")
          expect((yield* members(alice)).invites.map((i) => [i.id, i.role])).toEqual([[asAdmin.id, "admin"]])
          // The other way round too: the correction downwards holds.
          const again = yield* invite(alice, email, "member")
          expect((yield* members(alice)).invites.map((i) => [i.id, i.role])).toEqual([[again.id, "member"]])
          yield* invite(alice, email, "admin")

          const dan = yield* oauthSession(base, { email, provider: "google", provider_subject: randomUUID() })
          const joined = yield* myWorkspaces(base, dan.user_id, { token: dan.jwt, email })
          expect(joined.workspaces.find((w) => w.id === alice.workspaceId)?.role).toBe("admin")
        })
    )

    it.effect("the internal key accepts invites for a user without an email on record", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const alice = yield* tenant(base)
        const bob = yield* signUp(base)
        const email = `${uniqueName("bob")}@example.com`
        yield* invite(alice, email)
        const body = yield* myWorkspaces(base, bob.user_id, { token: INTERNAL_KEY, email })
        expect(body.workspaces.find((w) => w.id === alice.workspaceId)?.role).toBe("member")
      })
    )

    // With a session, the header email is the caller's own claim: accepting invites for
    // any email a user names would let anyone join any workspace that invited someone else.
    it.effect("a session cannot accept invites addressed to someone else's email", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const alice = yield* tenant(base)
        const victimEmail = `${uniqueName("victim")}@example.com`
        const sent = yield* invite(alice, victimEmail, "admin")
        // The victim exists with that email (OAuth); the attacker signed up with a password.
        yield* oauthSession(base, { email: victimEmail, provider: "google", provider_subject: randomUUID() })
        const mallory = yield* signUp(base)

        // The header is optional: the call succeeds with Mallory's own memberships and accepts nothing.
        const response = yield* myWorkspaces(base, mallory.user_id, { token: mallory.jwt, email: victimEmail })
        expect(response.workspaces.map((w) => w.id)).toHaveLength(1)
        expect(response.workspaces.map((w) => w.id)).not.toContain(alice.workspaceId)
        // Mallory is not a member and the invite is still the victim's to accept.
        const inAlices = yield* clientAt(base, { token: mallory.jwt, workspace: alice.workspaceId })
        yield* expectFailure(inAlices.environments.listEnvironments({}), 404, "workspace_not_found")
        const team = yield* members(alice)
        expect(team.members.map((m) => m.user_id)).not.toContain(mallory.user_id)
        expect(team.invites.find((i) => i.id === sent.id)?.status).toBe("pending")
      })
    )

    it.effect("a session's own unverified email accepts nothing (200); the internal key vouching for it accepts", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const alice = yield* tenant(base)
        // Bob signed up with a password: no provider ever verified an email of his.
        const bob = yield* signUp(base)
        const email = `${uniqueName("bob")}@example.com`
        const sent = yield* invite(alice, email)
        const own = yield* myWorkspaces(base, bob.user_id, { token: bob.jwt, email })
        expect(own.workspaces.map((w) => w.id)).not.toContain(alice.workspaceId)
        expect((yield* members(alice)).invites.find((i) => i.id === sent.id)?.status).toBe("pending")
        // The trusted web client, having verified the address itself, vouches with the internal key.
        const vouched = yield* myWorkspaces(base, bob.user_id, { token: INTERNAL_KEY, email })
        expect(vouched.workspaces.map((w) => w.id)).toContain(alice.workspaceId)
      })
    )

    it.effect("the internal key naming an unknown user with a pending invite answers 404, not 500", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const alice = yield* tenant(base)
        const email = `${uniqueName("nouser")}@example.com`
        const sent = yield* invite(alice, email)
        yield* expectFailure(myWorkspaces(base, randomUUID(), { token: INTERNAL_KEY, email }), 404)
        const team = yield* members(alice)
        expect(team.invites.find((i) => i.id === sent.id)?.status).toBe("pending")
      })
    )
  })

  describe("POST /v1/team/my-workspaces", () => {
    it.effect("creates an organization and workspace with the caller as owner (201), ready to use", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const user = yield* tenant(base)
        // Raw: the name is padded on purpose (the server trims it); the client refuses an untrimmed name.
        const response = yield* call(base, "POST", "/v1/team/my-workspaces", {
          token: user.jwt,
          body: { name: "  Acme Support  " }
        })
        expect(response.status, response.text).toBe(201)
        const created = Schema.decodeUnknownSync(WorkspaceMembership)(response.body)
        expectMembership(created)
        expect(created.role).toBe("owner")
        expect(created.name).toBe("Acme Support")
        expect(created.id).not.toBe(user.workspaceId)
        expect(created.organization_id).not.toBe(user.organizationId)

        const mine = yield* myWorkspaces(base, user.user_id, { token: user.jwt })
        expect(mine.workspaces.map((w) => w.id).sort()).toEqual([user.workspaceId, created.id].sort())

        // The new workspace has its default environment and settings, and the caller is its owner.
        const inCreated = yield* clientAt(base, { token: user.jwt, workspace: created.id })
        const { environments } = yield* inCreated.environments.listEnvironments({})
        expect(environments).toEqual([expect.objectContaining({ is_default: true, slug: "production" })])
        yield* inCreated.settings.getSettings({})
        const team = yield* members({ api: inCreated })
        expect(team.members).toEqual([expect.objectContaining({ user_id: user.user_id, role: "owner" })])
        // The default workspace is still the default.
        const defaults = yield* user.api.environments.listEnvironments({})
        expect(defaults.environments[0]!.id).toBe(user.defaultEnvironmentId)
      })
    )

    it.effect("a missing, empty, blank or over-long name answers 400 naming name; 415; 401", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const user = yield* signUp(base)
        const path = "/v1/team/my-workspaces"
        // Raw: bodies the schema refuses and a wrong media type.
        for (const body of [{}, { name: "" }, { name: "   " }, { name: 7 }, { name: "x".repeat(201) }]) {
          expectValidation(yield* call(base, "POST", path, { token: user.jwt, body }), "name")
        }
        expectError(
          yield* call(base, "POST", path, {
            token: user.jwt,
            raw: JSON.stringify({ name: "x" }),
            contentType: "text/plain"
          }),
          415,
          "unsupported_media_type"
        )
        yield* expectFailure((yield* clientAt(base)).team.createWorkspace({ payload: { name: "x" } }), 401)
        const mine = yield* myWorkspaces(base, user.user_id, { token: user.jwt })
        expect(mine.workspaces).toHaveLength(1)
      })
    )
  })
})
