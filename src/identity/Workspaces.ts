/**
 * Organizations, workspaces, memberships and invites. A new workspace always
 * comes with its settings row and its default environment (`production`).
 */
import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { insertDefaultView } from "../analytics/DefaultView.js"
import { AppConfig } from "../platform/Config.js"
import { Conflict, Forbidden, NotFound } from "../http/Errors.js"
import { decodeCursor, encodeCursor, pageAfterCut } from "../platform/Cursor.js"
import { prefixedId } from "../platform/Ids.js"
import { pageSize, toTimestamp } from "../platform/Schemas.js"
import { transactionOf } from "../platform/Sql.js"
import { capReached, writeWithinCount } from "../platform/WorkspaceCaps.js"
import type { Caller, WorkspaceRole } from "./Authentication.js"
import { MAX_MEMBERS_PAGE, WorkspaceId } from "./Domain.js"
import { type InviteRow, IdentityRepo, inviteExpiredBefore, type MembershipRow } from "./Repo.js"
import { SettingsRepo } from "./SettingsRepo.js"

const slugify = (name: string) =>
  name
    .toLowerCase()
    .normalize("NFKD")
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 48) || "workspace"

export const toMembership = (row: MembershipRow) => ({ ...row, id: WorkspaceId.make(row.id) })

/** An invite as the API answers it; it expires `ttlHours` (INVITE_TTL_HOURS) after it was sent. */
export const toInvite = (row: InviteRow, ttlHours: number) => ({
  id: row.id,
  workspace_id: row.workspace_id,
  email: row.email,
  role: row.role,
  status: row.status,
  created_at: toTimestamp(row.created_at),
  expires_at: toTimestamp(new Date(row.created_at.getTime() + ttlHours * 3_600_000))
})

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/** A members page cursor: the last member's user id. */
const decodeMemberCursor = (cursor: string) =>
  Option.map(
    Option.filter(decodeCursor(cursor, 1), ([userId]) => UUID.test(userId!)),
    ([userId]) => userId!
  )

export class Workspaces extends Effect.Service<Workspaces>()("identity/Workspaces", {
  effect: Effect.gen(function* () {
    const repo = yield* IdentityRepo
    const settingsRepo = yield* SettingsRepo
    const sql = yield* SqlClient.SqlClient
    const inTransaction = transactionOf(sql)
    const config = yield* AppConfig

    /** Creates an organization and a workspace owned by the user. Call inside a transaction. */
    const provision = Effect.fn("Workspaces.provision")(function* (ownerId: string, name: string) {
      const organizationId = prefixedId("org")
      const workspaceId = prefixedId("ws")
      yield* repo.insertOrganization(organizationId, name, ownerId)
      yield* repo.insertWorkspace({ id: workspaceId, organizationId, name, slug: slugify(name) })
      yield* repo.insertMembership(workspaceId, ownerId, "owner")
      yield* settingsRepo.insertEnvironment({
        id: prefixedId("env"),
        workspaceId,
        name: "Production",
        slug: "production",
        description: "Default environment",
        isDefault: true
      })
      yield* insertDefaultView(workspaceId).pipe(Effect.provideService(SqlClient.SqlClient, sql), Effect.orDie)
      return workspaceId
    })

    const membership = Effect.fn("Workspaces.membership")((workspaceId: string, userId: string) =>
      repo.findMembership(workspaceId, userId).pipe(
        Effect.flatMap(
          Option.match({
            onNone: () =>
              Effect.fail(
                new NotFound({
                  code: "workspace_not_found",
                  message: `Workspace ${workspaceId} does not exist or you are not a member.`
                })
              ),
            onSome: Effect.succeed
          })
        )
      )
    )

    /**
     * The caller's workspaces, after accepting pending invites addressed to
     * `email` (one transaction). A `claimed` email (a session's own header)
     * accepts invites only when an OAuth provider verified it for this user:
     * otherwise anyone could join a workspace by naming its invitee's email.
     */
    const listMine = Effect.fn("Workspaces.listMine")(
      (userId: string, email: string | undefined, trust: "vouched" | "claimed") =>
        inTransaction(
          Effect.gen(function* () {
            if (Option.isNone(yield* repo.findUserById(userId))) {
              return yield* new NotFound({ code: "user_not_found", message: `No user ${userId}.` })
            }
            const accepts =
              email !== undefined &&
              email.trim() !== "" &&
              (trust === "vouched" || (yield* repo.verifiedEmails(userId)).includes(email.trim().toLowerCase()))
            if (accepts) {
              // Newest first: of invites to one workspace, the latest decides the role (the first insert wins).
              // Expired invites are not accepted (nor listed); the answer is the user's memberships all the same.
              const accepted = yield* repo.acceptInvites(email.trim(), userId, config.inviteTtlHours)
              for (const invite of accepted) yield* repo.insertMembership(invite.workspace_id, userId, invite.role)
            }
            const rows = yield* repo.listMemberships(userId)
            return {
              is_platform_admin: config.platformAdminUserIds.includes(userId),
              workspaces: rows.map(toMembership)
            }
          })
        )
    )

    /**
     * A new organization and workspace owned by the user, unless the user owns MAX_WORKSPACES_PER_USER already:
     * each workspace has caps and fair shares of its own, so minting them freely would multiply those.
     */
    const create = Effect.fn("Workspaces.create")(function* (userId: string, name: string) {
      const created = yield* writeWithinCount(
        sql,
        `owned_workspaces:${userId}`,
        sql`select count(*)::int as stored from organization_members where user_id = ${userId} and role = 'owner'`,
        config.maxWorkspacesPerUser,
        Effect.succeed(false),
        Effect.gen(function* () {
          const workspaceId = yield* provision(userId, name)
          return toMembership(yield* membership(workspaceId, userId))
        })
      ).pipe(Effect.catchTags({ SqlError: Effect.die, ParseError: Effect.die }))
      if (Option.isNone(created)) {
        return yield* new Conflict({
          code: "workspace_limit_reached",
          message: `You may own at most ${config.maxWorkspacesPerUser} workspaces (MAX_WORKSPACES_PER_USER); ask the operator to raise the limit.`
        })
      }
      return created.value
    })

    /**
     * A pending invite, unless the workspace has MAX_PENDING_INVITES_PER_WORKSPACE unexpired ones already (409
     * `invite_limit_reached`): every one is in each `GET /v1/team/members` answer. Inviting an address again
     * replaces its pending invite, so it is never refused. Invites of one workspace take turns under its lock,
     * so two cannot both pass at the cap.
     */
    const invite = Effect.fn("Workspaces.invite")(function* (
      caller: Caller,
      input: { readonly email: string; readonly role: "owner" | "admin" | "member" }
    ) {
      if (input.role === "owner" && caller.role !== "owner") {
        return yield* new Forbidden({ code: "insufficient_role", message: "Only an owner can invite another owner." })
      }
      const workspaceId = caller.workspaceId
      const ttlHours = config.inviteTtlHours
      const email = input.email.trim().toLowerCase()
      const created = yield* writeWithinCount(
        sql,
        `team_invites:${workspaceId}`,
        sql`select count(*)::int as stored from team_invites
            where workspace_id = ${workspaceId} and status = 'pending'
              and created_at > ${inviteExpiredBefore(sql, ttlHours)}`,
        config.maxPendingInvitesPerWorkspace,
        repo.hasPendingInvite(workspaceId, email, ttlHours),
        Effect.gen(function* () {
          // Expired invites can no longer be accepted or listed: forget them.
          yield* repo.deleteExpiredInvites(workspaceId, ttlHours)
          // One pending invite per address and workspace: a new one replaces it, so the role a person
          // joins with is the one invited last (before, every invite was kept and acceptance kept
          // whichever it met first).
          yield* repo.withdrawPendingInvites(workspaceId, email)
          return toInvite(
            yield* repo.insertInvite({
              id: prefixedId("inv"),
              workspaceId,
              email,
              role: input.role,
              invitedBy: caller.userId ?? caller.principalId
            }),
            ttlHours
          )
        })
      ).pipe(Effect.catchTags({ SqlError: Effect.die, ParseError: Effect.die }))
      if (Option.isNone(created)) {
        return yield* capReached(
          "invite_limit_reached",
          config.maxPendingInvitesPerWorkspace,
          "pending invites",
          "MAX_PENDING_INVITES_PER_WORKSPACE",
          `wait for some to be accepted or to expire (after ${ttlHours} hours, INVITE_TTL_HOURS)`
        )
      }
      return created.value
    })

    /**
     * One page of the workspace's members, newest first (`limit` clamped to MAX_MEMBERS_PAGE, default 50,
     * `next_cursor` while more follow), with its pending invites that have not expired on every page: at most
     * MAX_PENDING_INVITES_PER_WORKSPACE of them, so they need no paging.
     */
    const members = Effect.fn("Workspaces.members")(function* (
      workspaceId: string,
      query: { readonly limit?: number | undefined; readonly cursor?: string | undefined } = {}
    ) {
      const limit = pageSize(query.limit, MAX_MEMBERS_PAGE)
      const { next, page } = yield* pageAfterCut(
        query.cursor,
        decodeMemberCursor,
        (row: { readonly user_id: string }) => encodeCursor([row.user_id]),
        (after) =>
          Effect.map(repo.listMembers(workspaceId, limit, after), (rows) => ({
            rows: rows.slice(0, limit),
            more: rows.length > limit
          }))
      )
      const invites = yield* repo.listPendingInvites({ workspaceId, ttlHours: config.inviteTtlHours })
      return {
        members: page.map((member) => ({
          ...member,
          role: member.role as WorkspaceRole,
          joined_at: toTimestamp(member.joined_at)
        })),
        invites: invites.map((row) => toInvite(row, config.inviteTtlHours)),
        ...next
      }
    })

    return { provision, membership, listMine, create, invite, members }
  }),
  dependencies: [IdentityRepo.Default, SettingsRepo.Default]
}) {}
