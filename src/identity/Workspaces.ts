/**
 * Organizations, workspaces, memberships and invites. A new workspace always
 * comes with its settings row and its default environment (`production`).
 */
import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { insertDefaultView } from "../analytics/DefaultView.js"
import { AppConfig } from "../platform/Config.js"
import { Conflict, Forbidden, NotFound } from "../http/Errors.js"
import { prefixedId } from "../platform/Ids.js"
import { toTimestamp } from "../platform/Schemas.js"
import { transactionOf } from "../platform/Sql.js"
import { writeWithinCount } from "../platform/WorkspaceCaps.js"
import type { Caller, WorkspaceRole } from "./Authentication.js"
import { WorkspaceId } from "./Domain.js"
import { type InviteRow, IdentityRepo, type MembershipRow } from "./Repo.js"
import { SettingsRepo } from "./SettingsRepo.js"

const slugify = (name: string) =>
  name
    .toLowerCase()
    .normalize("NFKD")
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 48) || "workspace"

export const toMembership = (row: MembershipRow) => ({ ...row, id: WorkspaceId.make(row.id) })

export const toInvite = (row: InviteRow) => ({
  id: row.id,
  workspace_id: row.workspace_id,
  email: row.email,
  role: row.role,
  status: row.status,
  created_at: toTimestamp(row.created_at)
})

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
              const accepted = yield* repo.acceptInvites(email.trim(), userId)
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

    const invite = Effect.fn("Workspaces.invite")(
      (caller: Caller, input: { readonly email: string; readonly role: "owner" | "admin" | "member" }) =>
        input.role === "owner" && caller.role !== "owner"
          ? Effect.fail(
              new Forbidden({ code: "insufficient_role", message: "Only an owner can invite another owner." })
            )
          : inTransaction(
              Effect.gen(function* () {
                // One pending invite per address and workspace: a new one replaces it, so the role a person
                // joins with is the one invited last (before, every invite was kept and acceptance kept
                // whichever it met first).
                const email = input.email.trim().toLowerCase()
                yield* repo.lockKey(`invite:${caller.workspaceId}:${email}`)
                yield* repo.withdrawPendingInvites(caller.workspaceId, email)
                return toInvite(
                  yield* repo.insertInvite({
                    id: prefixedId("inv"),
                    workspaceId: caller.workspaceId,
                    email,
                    role: input.role,
                    invitedBy: caller.userId ?? caller.principalId
                  })
                )
              })
            )
    )

    const members = Effect.fn("Workspaces.members")((workspaceId: string) =>
      Effect.all({ members: repo.listMembers(workspaceId), invites: repo.listInvites(workspaceId) }).pipe(
        Effect.map(({ invites, members }) => ({
          members: members.map((member) => ({
            ...member,
            role: member.role as WorkspaceRole,
            joined_at: toTimestamp(member.joined_at)
          })),
          invites: invites.map(toInvite)
        }))
      )
    )

    return { provision, membership, listMine, create, invite, members }
  }),
  dependencies: [IdentityRepo.Default, SettingsRepo.Default]
}) {}
