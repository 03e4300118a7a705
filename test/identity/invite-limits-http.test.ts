/**
 * Team invites are bounded, over HTTP against the real service and
 * PostgreSQL: an invite expires INVITE_TTL_HOURS (7 days) after it was sent
 * (then it is neither accepted nor listed), a workspace has at most
 * MAX_PENDING_INVITES_PER_WORKSPACE pending ones (set low here; 409
 * invite_limit_reached past it, also when sent at once), and
 * `GET /v1/team/members` pages its members (limit, cursor, next_cursor) with
 * the pending invites on every page. Invites are aged by moving their
 * `created_at` back in the database. Raw calls: the answers as sent.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { queryDatabase } from "../support/Database.js"
import { call, expectError, expectValidation, type JsonResponse } from "../support/Raw.js"
import { INTERNAL_KEY, joinedAs, signUp, type Tenant, tenant } from "../support/Tenants.js"
import { uniqueName } from "../support/TestPlatform.js"
import { baseUrl, SERVER_OPTIONS, TestDatabaseUrl, testServerWithDatabase } from "../support/TestServer.js"
import { config } from "./team-support.js"

const CAP = 3
const HOUR = 3_600_000

interface InviteBody {
  readonly id: string
  readonly email: string
  readonly role: string
  readonly status: string
  readonly created_at: string
  readonly expires_at: string
}
interface MembersBody {
  readonly members: ReadonlyArray<{ readonly user_id: string }>
  readonly invites: ReadonlyArray<InviteBody>
  readonly next_cursor?: string
}

const sendInvite = (base: string, owner: Tenant, email: string, role = "member") =>
  call(base, "POST", "/v1/team/invites", { token: owner.jwt, body: { email, role } })

const created = (response: JsonResponse) => {
  expect(response.status, response.text).toBe(201)
  return response.body as InviteBody
}

const membersPage = (base: string, owner: Tenant, query = "") =>
  Effect.map(call(base, "GET", `/v1/team/members${query}`, { token: owner.jwt }), (response) => {
    expect(response.status, response.text).toBe(200)
    return response.body as MembersBody
  })

/** The workspaces of `userId` after the trusted web client (internal key) vouches for `email`. */
const joinWith = (base: string, userId: string, email: string) =>
  Effect.map(
    call(base, "GET", "/v1/team/my-workspaces", {
      token: INTERNAL_KEY,
      headers: { "x-service-user-id": userId, "x-service-user-email": email }
    }),
    (response) => {
      expect(response.status, response.text).toBe(200)
      return (response.body as { workspaces: ReadonlyArray<{ id: string; role: string }> }).workspaces
    }
  )

/** Moves the invite's `created_at` back by `hours`, as if it had been sent that long ago. */
const age = (inviteId: string, hours: number) =>
  Effect.flatMap(TestDatabaseUrl, (db) =>
    queryDatabase(db, "update team_invites set created_at = created_at - make_interval(hours => $2) where id = $1", [
      inviteId,
      hours
    ])
  )

layer(
  testServerWithDatabase("database", { ...config, MAX_PENDING_INVITES_PER_WORKSPACE: String(CAP) }),
  SERVER_OPTIONS
)("invite expiry, the pending-invite cap and member pages", (it) => {
  describe("expiry (INVITE_TTL_HOURS, 168 by default)", () => {
    it.effect(
      "an invite older than 7 days is neither accepted nor listed; one younger still is; sending again renews",
      () =>
        Effect.gen(function* () {
          const base = yield* baseUrl
          const owner = yield* tenant(base)
          const oldEmail = `${uniqueName("old")}@example.com`
          const youngEmail = `${uniqueName("young")}@example.com`
          const old = created(yield* sendInvite(base, owner, oldEmail))
          const young = created(yield* sendInvite(base, owner, youngEmail, "admin"))
          yield* age(old.id, 169)
          yield* age(young.id, 167)

          // Only the unexpired invite is listed as pending.
          expect((yield* membersPage(base, owner)).invites.map((invite) => invite.id)).toEqual([young.id])

          // The person the expired invite named joins nothing: my-workspaces answers their own workspace only.
          const late = yield* signUp(base)
          const lateWorkspaces = yield* joinWith(base, late.user_id, oldEmail)
          expect(lateWorkspaces.map((w) => w.id)).not.toContain(owner.workspaceId)
          expect(lateWorkspaces).toHaveLength(1)
          // The unexpired one is accepted as before.
          const onTime = yield* signUp(base)
          const onTimeWorkspaces = yield* joinWith(base, onTime.user_id, youngEmail)
          expect(onTimeWorkspaces.find((w) => w.id === owner.workspaceId)?.role).toBe("admin")
          const team = yield* membersPage(base, owner)
          expect(team.members.map((m) => m.user_id)).toContain(onTime.user_id)
          expect(team.members.map((m) => m.user_id)).not.toContain(late.user_id)

          // Inviting the address again sends a fresh invite, which is accepted.
          const renewed = created(yield* sendInvite(base, owner, oldEmail))
          expect(renewed.status).toBe("pending")
          // Extension: when an invite expires, 7 days after it was sent.
          expect(Date.parse(renewed.expires_at) - Date.parse(renewed.created_at)).toBe(168 * HOUR)
          expect((yield* joinWith(base, late.user_id, oldEmail)).find((w) => w.id === owner.workspaceId)?.role).toBe(
            "member"
          )
        })
    )
  })

  describe("MAX_PENDING_INVITES_PER_WORKSPACE", () => {
    it.effect(
      "a 4th pending invite of 3 is 409 invite_limit_reached, even sent at once; replacing, accepting and expiry free room",
      () =>
        Effect.gen(function* () {
          const base = yield* baseUrl
          const db = yield* TestDatabaseUrl
          const owner = yield* tenant(base)
          const other = yield* tenant(base)
          const emails = Array.from({ length: CAP + 2 }, (_, i) => `${uniqueName(`cap${i}`)}@example.com`)
          const answers = yield* Effect.forEach(emails, (email) => sendInvite(base, owner, email), {
            concurrency: "unbounded"
          })
          expect(answers.map((answer) => answer.status).sort()).toEqual([201, 201, 201, 409, 409])
          for (const refused of answers.filter((answer) => answer.status === 409)) {
            const error = expectError(refused, 409, "invite_limit_reached")
            expect(error.message).toMatch(/MAX_PENDING_INVITES_PER_WORKSPACE/)
          }
          const pending = answers.filter((answer) => answer.status === 201).map((answer) => answer.body as InviteBody)
          expect((yield* membersPage(base, owner)).invites).toHaveLength(CAP)
          // Nothing of the refused ones was stored.
          const stored = yield* queryDatabase<{ n: number }>(
            db,
            "select count(*)::int as n from team_invites where workspace_id = $1",
            [owner.workspaceId]
          )
          expect(stored[0]!.n).toBe(CAP)

          // At the cap, inviting a pending address again replaces its invite: never refused.
          const replaced = created(yield* sendInvite(base, owner, pending[0]!.email, "admin"))
          expect((yield* membersPage(base, owner)).invites.map((invite) => invite.id)).toContain(replaced.id)
          expect((yield* membersPage(base, owner)).invites).toHaveLength(CAP)
          expectError(yield* sendInvite(base, owner, `${uniqueName("more")}@example.com`), 409, "invite_limit_reached")
          // Another workspace's count is its own.
          created(yield* sendInvite(base, other, `${uniqueName("theirs")}@example.com`))

          // An accepted invite is no longer pending: room for one more.
          const joined = yield* signUp(base)
          yield* joinWith(base, joined.user_id, replaced.email)
          created(yield* sendInvite(base, owner, `${uniqueName("after-accept")}@example.com`))
          expectError(yield* sendInvite(base, owner, `${uniqueName("more")}@example.com`), 409, "invite_limit_reached")

          // An expired invite neither counts nor stays: the next invite forgets it.
          yield* age(pending[1]!.id, 169)
          created(yield* sendInvite(base, owner, `${uniqueName("after-expiry")}@example.com`))
          const forgotten = yield* queryDatabase(db, "select 1 from team_invites where id = $1", [pending[1]!.id])
          expect(forgotten).toEqual([])
          expectError(yield* sendInvite(base, owner, `${uniqueName("more")}@example.com`), 409, "invite_limit_reached")
        })
    )

    it.effect("two invites sent at once with one place left: one passes, one is 409", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        for (let i = 0; i < CAP - 1; i++)
          created(yield* sendInvite(base, owner, `${uniqueName(`fill${i}`)}@example.com`))
        const answers = yield* Effect.all(
          [
            sendInvite(base, owner, `${uniqueName("racer-a")}@example.com`),
            sendInvite(base, owner, `${uniqueName("racer-b")}@example.com`)
          ],
          { concurrency: "unbounded" }
        )
        expect(answers.map((answer) => answer.status).sort()).toEqual([201, 409])
        expect((yield* membersPage(base, owner)).invites).toHaveLength(CAP)
      })
    )
  })

  describe("GET /v1/team/members pages", () => {
    it.effect("members newest first, limit and cursor, next_cursor until the last page; invites on every page", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const joined: Array<string> = []
        for (let i = 0; i < 4; i++) joined.push((yield* joinedAs(base, owner, "member")).user_id)
        const invite = created(yield* sendInvite(base, owner, `${uniqueName("waiting")}@example.com`))
        const newestFirst = [...joined].reverse().concat(owner.user_id)

        const seen: Array<string> = []
        let cursor: string | undefined
        let pages = 0
        do {
          const page = yield* membersPage(
            base,
            owner,
            `?limit=2${cursor === undefined ? "" : `&cursor=${encodeURIComponent(cursor)}`}`
          )
          pages++
          expect(page.members.length).toBeLessThanOrEqual(2)
          expect(page.invites.map((i) => i.id)).toEqual([invite.id])
          seen.push(...page.members.map((m) => m.user_id))
          cursor = page.next_cursor
        } while (cursor !== undefined && pages < 10)
        expect(pages).toBe(3)
        expect(seen).toEqual(newestFirst)

        // Default 50: all of them, no cursor; above the cap (100) clamped, not refused.
        const whole = yield* membersPage(base, owner)
        expect(whole.members.map((m) => m.user_id)).toEqual(newestFirst)
        expect(whole.next_cursor).toBeUndefined()
        expect((yield* membersPage(base, owner, "?limit=1000")).members).toHaveLength(5)

        // Below the minimum, not a number, or not a cursor of this list: 400 naming it.
        for (const query of ["?limit=0", "?limit=-1", "?limit=two"]) {
          expectValidation(yield* call(base, "GET", `/v1/team/members${query}`, { token: owner.jwt }), "limit")
        }
        const foreign = Buffer.from(JSON.stringify(["not-a-user-id"])).toString("base64url")
        for (const bad of ["garbage", foreign]) {
          expectValidation(yield* call(base, "GET", `/v1/team/members?cursor=${bad}`, { token: owner.jwt }), "cursor")
        }
      })
    )
  })
})
