/**
 * Team over HTTP against the real service and PostgreSQL: my-workspaces
 * (who may ask, invites accepted in the same answer), creating workspaces,
 * invites and members, what each role may call, and `is_platform_admin`
 * from PLATFORM_ADMIN_USER_IDS (a second server over the same database).
 */
import { describe, expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { HttpServer } from "@effect/platform"
import { randomUUID } from "node:crypto"
import { uniqueName } from "../support/TestPlatform.js"
import { baseUrl, TestDatabaseUrl, testServerOver, testServerWithDatabase } from "../support/TestServer.js"
import {
  call,
  createEnvironment,
  createKey,
  expectError,
  expectStatus,
  expectValidation,
  INTERNAL_KEY,
  joinedAs,
  oauthSession,
  SERVER_OPTIONS,
  sha256Hex,
  signUp,
  tenant,
  TIMESTAMP
} from "./http-helpers.js"

interface Membership {
  readonly id: string
  readonly name: string
  readonly slug: string
  readonly organization_id: string
  readonly role: string
  readonly is_attacks_enabled: boolean
  readonly is_knowledge_base_enabled: boolean
  readonly is_mcp_gateway_enabled: boolean
}

interface MyWorkspaces {
  readonly is_platform_admin: boolean
  readonly workspaces: ReadonlyArray<Membership>
}

const myWorkspaces = (
  base: string,
  userId: string,
  options: { readonly token?: string | undefined; readonly email?: string | undefined } = {}
) =>
  call(base, "GET", "/v1/team/my-workspaces", {
    token: options.token,
    headers: {
      "x-service-user-id": userId,
      ...(options.email === undefined ? {} : { "x-service-user-email": options.email })
    }
  })

const invite = (base: string, owner: { jwt: string }, email: string, role?: string, workspace?: string) =>
  Effect.map(
    call(base, "POST", "/v1/team/invites", {
      token: owner.jwt,
      workspace,
      body: role === undefined ? { email } : { email, role }
    }),
    (response) => expectStatus(response, 201) as { id: string; email: string; role: string; status: string }
  )

const members = (base: string, owner: { jwt: string }, workspace?: string) =>
  Effect.map(
    call(base, "GET", "/v1/team/members", { token: owner.jwt, workspace }),
    (response) =>
      expectStatus(response, 200) as {
        members: Array<{ user_id: string; username: string; role: string; joined_at: string }>
        invites: Array<{ id: string; email: string; role: string; status: string; workspace_id: string }>
      }
  )

const expectMembership = (membership: Membership) => {
  expect(typeof membership.id).toBe("string")
  expect(typeof membership.name).toBe("string")
  expect(typeof membership.slug).toBe("string")
  expect(typeof membership.organization_id).toBe("string")
  expect(["owner", "admin", "member"]).toContain(membership.role)
  expect(typeof membership.is_attacks_enabled).toBe("boolean")
  expect(typeof membership.is_knowledge_base_enabled).toBe("boolean")
  expect(typeof membership.is_mcp_gateway_enabled).toBe("boolean")
}

const config = { INTERNAL_API_KEY: INTERNAL_KEY }

layer(testServerWithDatabase("database", config), SERVER_OPTIONS)("team over HTTP", (it) => {
  describe("GET /v1/team/my-workspaces", () => {
    it.effect("a session whose sub is X-SERVICE-User-Id gets its workspaces and is_platform_admin false", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const user = yield* tenant(base)
        const body = expectStatus(yield* myWorkspaces(base, user.user_id, { token: user.jwt }), 200) as MyWorkspaces
        expect(Object.keys(body).sort()).toEqual(["is_platform_admin", "workspaces"])
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
        expect(expectStatus(upper, 200).workspaces).toEqual(body.workspaces)
      })
    )

    it.effect("the internal key may ask for any user", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const user = yield* tenant(base)
        const body = expectStatus(yield* myWorkspaces(base, user.user_id, { token: INTERNAL_KEY }), 200) as MyWorkspaces
        expect(body.workspaces.map((w) => w.id)).toEqual([user.workspaceId])
        expect(body.is_platform_admin).toBe(false)
      })
    )

    it.effect("another user's session, a runtime key, garbage or no credential answer 401/403", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const user = yield* tenant(base)
        const other = yield* signUp(base)
        const key = yield* createKey(base, user)
        for (const token of [other.jwt, key.plaintext_key, "garbage", `${INTERNAL_KEY}x`, undefined]) {
          const response = yield* myWorkspaces(base, user.user_id, { token })
          expect([401, 403], `${String(token).slice(0, 12)}: ${response.text}`).toContain(response.status)
          expectError(response, response.status)
          expect(response.text).not.toContain(user.workspaceId)
        }
        // A session after a password change: the old one is over.
        const changed = expectStatus(
          yield* call(base, "POST", "/v1/auth/password", {
            body: { username: user.username, current_password: user.password, new_password: sha256Hex("new") }
          }),
          200
        )
        expectError(yield* myWorkspaces(base, user.user_id, { token: user.jwt }), 401)
        expectStatus(yield* myWorkspaces(base, user.user_id, { token: changed.jwt }), 200)
      })
    )

    it.effect("a missing or non-UUID X-SERVICE-User-Id answers 400 naming the header", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const user = yield* signUp(base)
        const missing = yield* call(base, "GET", "/v1/team/my-workspaces", { token: user.jwt })
        expectValidation(missing, "x-service-user-id")
        for (const id of ["not-a-uuid", "123", `${user.user_id}0`]) {
          expectValidation(yield* myWorkspaces(base, id, { token: user.jwt }), "x-service-user-id")
        }
      })
    )

    it.effect("pending invites for X-SERVICE-User-Email are accepted in the same answer (session path)", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const alice = yield* tenant(base)
        const carol = yield* tenant(base)
        const email = `${uniqueName("Eve")}@Example.com`
        const fromAlice = yield* invite(base, alice, email, "admin")
        expect(fromAlice).toMatchObject({ email: email.toLowerCase(), role: "admin", status: "pending" })
        yield* invite(base, carol, email.toUpperCase(), "member")
        // Eve signs in through OAuth with that email (any case).
        const eve = yield* oauthSession(base, { email, provider: "google", provider_subject: randomUUID() })

        const first = expectStatus(
          yield* myWorkspaces(base, eve.user_id, { token: eve.jwt, email: email.toLowerCase() }),
          200
        ) as MyWorkspaces
        for (const membership of first.workspaces) expectMembership(membership)
        const roles = Object.fromEntries(first.workspaces.map((w) => [w.id, w.role]))
        expect(roles[alice.workspaceId]).toBe("admin")
        expect(roles[carol.workspaceId]).toBe("member")
        expect(first.workspaces).toHaveLength(3)

        // Again: nothing new, nothing doubled.
        const second = expectStatus(
          yield* myWorkspaces(base, eve.user_id, { token: eve.jwt, email }),
          200
        ) as MyWorkspaces
        expect(second.workspaces.map((w) => w.id).sort()).toEqual(first.workspaces.map((w) => w.id).sort())

        // The inviting workspace sees the invite accepted and Eve as admin.
        const team = yield* members(base, alice)
        expect(team.invites.find((i) => i.id === fromAlice.id)?.status).toBe("accepted")
        expect(team.members.find((m) => m.user_id === eve.user_id)?.role).toBe("admin")
        // Eve can now work in Alice's workspace with the header.
        expectStatus(yield* call(base, "GET", "/v1/api-keys", { token: eve.jwt, workspace: alice.workspaceId }), 200)
      })
    )

    it.effect("the internal key accepts invites for a user without an email on record", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const alice = yield* tenant(base)
        const bob = yield* signUp(base)
        const email = `${uniqueName("bob")}@example.com`
        yield* invite(base, alice, email)
        const body = expectStatus(
          yield* myWorkspaces(base, bob.user_id, { token: INTERNAL_KEY, email }),
          200
        ) as MyWorkspaces
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
        const sent = yield* invite(base, alice, victimEmail, "admin")
        // The victim exists with that email (OAuth); the attacker signed up with a password.
        yield* oauthSession(base, { email: victimEmail, provider: "google", provider_subject: randomUUID() })
        const mallory = yield* signUp(base)

        // The header is optional: the call succeeds with Mallory's own memberships and accepts nothing.
        const response = expectStatus(
          yield* myWorkspaces(base, mallory.user_id, { token: mallory.jwt, email: victimEmail }),
          200
        ) as MyWorkspaces
        expect(response.workspaces.map((w) => w.id)).toHaveLength(1)
        expect(response.workspaces.map((w) => w.id)).not.toContain(alice.workspaceId)
        // Mallory is not a member and the invite is still the victim's to accept.
        expectError(
          yield* call(base, "GET", "/v1/environments", { token: mallory.jwt, workspace: alice.workspaceId }),
          404,
          "workspace_not_found"
        )
        const team = yield* members(base, alice)
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
        const sent = yield* invite(base, alice, email)
        const own = expectStatus(yield* myWorkspaces(base, bob.user_id, { token: bob.jwt, email }), 200) as MyWorkspaces
        expect(own.workspaces.map((w) => w.id)).not.toContain(alice.workspaceId)
        expect((yield* members(base, alice)).invites.find((i) => i.id === sent.id)?.status).toBe("pending")
        // The trusted web client, having verified the address itself, vouches with the internal key.
        const vouched = expectStatus(
          yield* myWorkspaces(base, bob.user_id, { token: INTERNAL_KEY, email }),
          200
        ) as MyWorkspaces
        expect(vouched.workspaces.map((w) => w.id)).toContain(alice.workspaceId)
      })
    )

    it.effect("the internal key naming an unknown user with a pending invite answers 404, not 500", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const alice = yield* tenant(base)
        const email = `${uniqueName("nouser")}@example.com`
        const sent = yield* invite(base, alice, email)
        const response = yield* myWorkspaces(base, randomUUID(), { token: INTERNAL_KEY, email })
        expectError(response, 404)
        const team = yield* members(base, alice)
        expect(team.invites.find((i) => i.id === sent.id)?.status).toBe("pending")
      })
    )
  })

  describe("POST /v1/team/my-workspaces", () => {
    it.effect("creates an organization and workspace with the caller as owner (201), ready to use", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const user = yield* tenant(base)
        const response = yield* call(base, "POST", "/v1/team/my-workspaces", {
          token: user.jwt,
          body: { name: "  Acme Support  " }
        })
        const created = expectStatus(response, 201) as Membership
        expectMembership(created)
        expect(created.role).toBe("owner")
        expect(created.name).toBe("Acme Support")
        expect(created.id).not.toBe(user.workspaceId)
        expect(created.organization_id).not.toBe(user.organizationId)

        const mine = expectStatus(yield* myWorkspaces(base, user.user_id, { token: user.jwt }), 200) as MyWorkspaces
        expect(mine.workspaces.map((w) => w.id).sort()).toEqual([user.workspaceId, created.id].sort())

        // The new workspace has its default environment and settings, and the caller is its owner.
        const environments = expectStatus(
          yield* call(base, "GET", "/v1/environments", { token: user.jwt, workspace: created.id }),
          200
        )
        expect(environments.environments).toEqual([expect.objectContaining({ is_default: true, slug: "production" })])
        expectStatus(yield* call(base, "GET", "/v1/settings", { token: user.jwt, workspace: created.id }), 200)
        const team = yield* members(base, user, created.id)
        expect(team.members).toEqual([expect.objectContaining({ user_id: user.user_id, role: "owner" })])
        // The default workspace is still the default.
        const defaults = expectStatus(yield* call(base, "GET", "/v1/environments", { token: user.jwt }), 200)
        expect(defaults.environments[0].id).toBe(user.defaultEnvironmentId)
      })
    )

    it.effect("a missing, empty, blank or over-long name answers 400 naming name; 415; 401", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const user = yield* signUp(base)
        const path = "/v1/team/my-workspaces"
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
        expectError(yield* call(base, "POST", path, { body: { name: "x" } }), 401)
        const mine = expectStatus(yield* myWorkspaces(base, user.user_id, { token: user.jwt }), 200) as MyWorkspaces
        expect(mine.workspaces).toHaveLength(1)
      })
    )
  })

  describe("POST /v1/team/invites and GET /v1/team/members", () => {
    it.effect(
      "an owner invites (201, email lower-cased, role default member) and members lists members and invites",
      () =>
        Effect.gen(function* () {
          const base = yield* baseUrl
          const owner = yield* tenant(base)
          const email = `${uniqueName("New.Hire")}@Example.COM`
          const response = yield* call(base, "POST", "/v1/team/invites", { token: owner.jwt, body: { email } })
          const created = expectStatus(response, 201)
          expect(created).toMatchObject({
            workspace_id: owner.workspaceId,
            email: email.toLowerCase(),
            role: "member",
            status: "pending"
          })
          expect(typeof created.id).toBe("string")
          expect(created.created_at).toMatch(TIMESTAMP)

          const team = yield* members(base, owner)
          expect(team.members).toEqual([
            {
              user_id: owner.user_id,
              username: owner.username,
              role: "owner",
              joined_at: expect.stringMatching(TIMESTAMP)
            }
          ])
          expect(team.invites).toEqual([expect.objectContaining({ id: created.id, status: "pending" })])
        })
    )

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
        expect((yield* members(base, owner)).invites).toEqual([])
      })
    )
  })

  describe("credentials", () => {
    it.effect("without a credential the team endpoints answer 401", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        expectError(yield* call(base, "GET", "/v1/team/members"), 401)
        expectError(yield* call(base, "POST", "/v1/team/invites", { body: { email: "a@b.co" } }), 401)
        expectError(yield* call(base, "POST", "/v1/team/my-workspaces", { body: { name: "x" } }), 401)
        expectError(yield* myWorkspaces(base, randomUUID()), 401)
      })
    )
  })

  describe("roles", () => {
    it.effect("a member reads but cannot manage keys, settings, environments or invites (403)", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const staging = yield* createEnvironment(base, owner)
        const key = yield* createKey(base, owner)
        const member = yield* joinedAs(base, owner, "member")
        const ws = owner.workspaceId
        const token = member.jwt

        const allowed: ReadonlyArray<readonly [string, string, number]> = [
          ["GET", "/v1/settings", 200],
          ["GET", "/v1/environments", 200],
          ["GET", `/v1/environments/${staging.id}/checker-modes`, 200],
          ["GET", "/v1/team/members", 200]
        ]
        for (const [method, path, status] of allowed) {
          const response = yield* call(base, method, path, { token, workspace: ws })
          expect(response.status, `${method} ${path}: ${response.text}`).toBe(status)
        }
        const forbidden: ReadonlyArray<readonly [string, string, unknown?]> = [
          ["GET", "/v1/api-keys"],
          ["POST", "/v1/api-keys", { name: "member key" }],
          ["PATCH", "/v1/api-keys/batch/revoke", { ids: [key.api_key.id] }],
          ["PATCH", "/v1/settings", { default_action: "deny" }],
          ["PATCH", "/v1/settings", {}],
          ["POST", "/v1/environments", { name: "m", slug: "member-env" }],
          ["PATCH", `/v1/environments/${staging.id}`, { name: "renamed" }],
          ["DELETE", `/v1/environments/${staging.id}`],
          ["PUT", `/v1/environments/${staging.id}/checker-modes`, { approval_checker_mode: "enforce" }],
          ["POST", "/v1/team/invites", { email: "friend@example.com", role: "owner" }]
        ]
        for (const [method, path, body] of forbidden) {
          const response = yield* call(base, method, path, { token, workspace: ws, body })
          expect(response.status, `${method} ${path}: ${response.text}`).toBe(403)
          expectError(response, 403, "insufficient_role")
        }
        // Nothing changed.
        const settings = expectStatus(yield* call(base, "GET", "/v1/settings", { token: owner.jwt }), 200)
        expect(settings.default_action).toBe("permit")
        const keys = expectStatus(yield* call(base, "GET", "/v1/api-keys", { token: owner.jwt }), 200)
        expect(keys.api_keys.map((k: { status: string }) => k.status)).toEqual(["active"])
        expect((yield* members(base, owner)).invites.map((i) => i.email)).not.toContain("friend@example.com")
        // In its own personal workspace the member is the owner.
        expectStatus(yield* call(base, "GET", "/v1/api-keys", { token }), 200)
        // And may create workspaces of its own.
        expectStatus(yield* call(base, "POST", "/v1/team/my-workspaces", { token, body: { name: "Mine" } }), 201)
      })
    )

    it.effect("an admin manages keys, settings, environments and invites", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const admin = yield* joinedAs(base, owner, "admin")
        const ws = owner.workspaceId
        const token = admin.jwt
        expectStatus(yield* call(base, "GET", "/v1/api-keys", { token, workspace: ws }), 200)
        const key = expectStatus(
          yield* call(base, "POST", "/v1/api-keys", { token, workspace: ws, body: { name: "admin key" } }),
          201
        )
        expect(key.api_key.created_by).toBe(admin.user_id)
        expectStatus(
          yield* call(base, "PATCH", "/v1/settings", { token, workspace: ws, body: { default_action: "defer" } }),
          200
        )
        const environment = expectStatus(
          yield* call(base, "POST", "/v1/environments", { token, workspace: ws, body: { name: "QA", slug: "qa" } }),
          201
        )
        expectStatus(
          yield* call(base, "PUT", `/v1/environments/${environment.id}/checker-modes`, {
            token,
            workspace: ws,
            body: { flow_checker_mode: "observe" }
          }),
          200
        )
        expectStatus(
          yield* call(base, "POST", "/v1/team/invites", {
            token,
            workspace: ws,
            body: { email: `${uniqueName("x")}@example.com`, role: "member" }
          }),
          201
        )
        // The owner sees the admin's changes.
        const settings = expectStatus(yield* call(base, "GET", "/v1/settings", { token: owner.jwt }), 200)
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
        expect(
          (expectStatus(yield* myWorkspaces(base, admin.user_id, { token: admin.jwt }), 200) as MyWorkspaces)
            .is_platform_admin
        ).toBe(false)

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
        const adminB = expectStatus(
          yield* call(baseB, "POST", "/v1/auth/login", {
            body: { username: admin.username, password: admin.password }
          }),
          200
        )
        const plainB = expectStatus(
          yield* call(baseB, "POST", "/v1/auth/login", {
            body: { username: plain.username, password: plain.password }
          }),
          200
        )
        const asAdmin = expectStatus(
          yield* myWorkspaces(baseB, admin.user_id, { token: adminB.jwt }),
          200
        ) as MyWorkspaces
        expect(asAdmin.is_platform_admin).toBe(true)
        expect(asAdmin.workspaces).toHaveLength(1)
        const asPlain = expectStatus(
          yield* myWorkspaces(baseB, plain.user_id, { token: plainB.jwt }),
          200
        ) as MyWorkspaces
        expect(asPlain.is_platform_admin).toBe(false)
        // Through the internal key too.
        const viaInternal = expectStatus(
          yield* myWorkspaces(baseB, admin.user_id, { token: INTERNAL_KEY }),
          200
        ) as MyWorkspaces
        expect(viaInternal.is_platform_admin).toBe(true)
      })
    )
  })
})
