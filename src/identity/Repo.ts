/** SQL of the identity domain. Every workspace-owned query takes the workspace id. */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { dieOnErrors, lockKey } from "../platform/Sql.js"

const Role = Schema.Literal("owner", "admin", "member")

const UserRow = Schema.Struct({
  id: Schema.String,
  username: Schema.String,
  email: Schema.NullOr(Schema.String),
  password_hash: Schema.NullOr(Schema.String),
  password_version: Schema.Number,
  default_workspace_id: Schema.NullOr(Schema.String)
})
export type UserRow = typeof UserRow.Type

/** A session's user, and whether that session was signed out. */
const SessionUserRow = Schema.Struct({ ...UserRow.fields, ended: Schema.Boolean })

const MembershipRow = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  slug: Schema.String,
  organization_id: Schema.String,
  role: Role,
  is_attacks_enabled: Schema.Boolean,
  is_knowledge_base_enabled: Schema.Boolean,
  is_mcp_gateway_enabled: Schema.Boolean
})
export type MembershipRow = typeof MembershipRow.Type

const MemberRow = Schema.Struct({
  user_id: Schema.String,
  username: Schema.String,
  role: Schema.String,
  joined_at: Schema.DateFromSelf
})

const InviteRow = Schema.Struct({
  id: Schema.String,
  workspace_id: Schema.String,
  email: Schema.String,
  role: Role,
  status: Schema.Literal("pending", "accepted"),
  created_at: Schema.DateFromSelf
})
export type InviteRow = typeof InviteRow.Type

/** A workspace's feature flags (`workspaces.is_*_enabled`). */
const FeatureFlagsRow = Schema.Struct({
  is_attacks_enabled: Schema.Boolean,
  is_knowledge_base_enabled: Schema.Boolean,
  is_mcp_gateway_enabled: Schema.Boolean
})
export type FeatureFlagsRow = typeof FeatureFlagsRow.Type

/** An invite sent before this instant has expired: `ttlHours` (INVITE_TTL_HOURS) before the database's now. */
export const inviteExpiredBefore = (sql: SqlClient.SqlClient, ttlHours: number) =>
  sql`(now() - ${ttlHours}::int * interval '1 hour')`

const first = <A>(rows: ReadonlyArray<A>) => Option.fromNullable(rows[0])

export class IdentityRepo extends Effect.Service<IdentityRepo>()("identity/IdentityRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const userColumns = sql`id::text as id, username, email, password_hash, password_version, default_workspace_id`
    const membershipColumns = sql`w.id, w.name, w.slug, w.organization_id, m.role,
      w.is_attacks_enabled, w.is_knowledge_base_enabled, w.is_mcp_gateway_enabled`
    const inviteColumns = sql`id, workspace_id, email, role, status, created_at`
    const flagColumns = sql`is_attacks_enabled, is_knowledge_base_enabled, is_mcp_gateway_enabled`

    const findUserByIdentity = SqlSchema.findOne({
      Request: Schema.Struct({ provider: Schema.String, subject: Schema.String }),
      Result: UserRow,
      execute: ({ provider, subject }) =>
        sql`select u.id::text as id, u.username, u.email, u.password_hash, u.password_version, u.default_workspace_id
            from user_identities i join users u on u.id = i.user_id
            where i.provider = ${provider} and i.provider_subject = ${subject}`
    })
    const setPassword = SqlSchema.findOne({
      Request: Schema.Struct({ userId: Schema.String, passwordHash: Schema.String, version: Schema.Number }),
      Result: Schema.Struct({ password_version: Schema.Number }),
      execute: ({ passwordHash, userId, version }) =>
        sql`update users set password_hash = ${passwordHash}, password_version = password_version + 1, updated_at = now()
            where id = ${userId} and password_version = ${version} returning password_version`
    })
    const verifiedEmails = SqlSchema.findAll({
      Request: Schema.String,
      Result: Schema.Struct({ email: Schema.String }),
      execute: (userId) =>
        sql`select lower(email) as email from users where id = ${userId} and email is not null
            union select lower(email) from user_identities where user_id = ${userId}`
    })

    const findMembership = SqlSchema.findOne({
      Request: Schema.Struct({ workspaceId: Schema.String, userId: Schema.String }),
      Result: MembershipRow,
      execute: ({ userId, workspaceId }) =>
        sql`select ${membershipColumns} from workspace_members m join workspaces w on w.id = m.workspace_id
            where m.workspace_id = ${workspaceId} and m.user_id = ${userId}`
    })

    const insertInvite = SqlSchema.single({
      Request: Schema.Struct({
        id: Schema.String,
        workspaceId: Schema.String,
        email: Schema.String,
        role: Schema.String,
        invitedBy: Schema.String
      }),
      Result: InviteRow,
      execute: (invite) =>
        sql`insert into team_invites (id, workspace_id, email, role, invited_by)
            values (${invite.id}, ${invite.workspaceId}, ${invite.email}, ${invite.role}, ${invite.invitedBy})
            returning ${inviteColumns}`
    })
    const expiredBefore = (ttlHours: number) => inviteExpiredBefore(sql, ttlHours)

    const acceptInvites = SqlSchema.findAll({
      Request: Schema.Struct({ email: Schema.String, userId: Schema.String, ttlHours: Schema.Number }),
      Result: InviteRow,
      execute: ({ email, ttlHours, userId }) =>
        sql`with accepted as (
              update team_invites set status = 'accepted', accepted_at = now(), accepted_by = ${userId}
              where status = 'pending' and lower(email) = lower(${email}) and created_at > ${expiredBefore(ttlHours)}
              returning ${inviteColumns})
            select * from accepted order by created_at desc, id desc`
    })
    const decodeMembers = Schema.decodeUnknown(Schema.Array(MemberRow))

    const decodeFeatureFlags = Schema.decodeUnknown(Schema.Array(FeatureFlagsRow))

    return dieOnErrors({
      /** Serializes transactions that take the same key (held until commit). */
      lockKey: (key: string) => lockKey(sql, key),

      // ---- users
      findUserById: SqlSchema.findOne({
        Request: Schema.String,
        Result: UserRow,
        execute: (id) => sql`select ${userColumns} from users where id = ${id}`
      }),
      findSessionUser: SqlSchema.findOne({
        Request: Schema.Struct({ userId: Schema.String, sessionId: Schema.String }),
        Result: SessionUserRow,
        execute: ({ sessionId, userId }) =>
          sql`select ${userColumns}, exists (select 1 from ended_sessions where jti = ${sessionId}) as ended
              from users where id = ${userId}`
      }),
      /** Ends a session until its JWT expires; forgets up to 100 rows of JWTs expired since (no sweeper needed). */
      endSession: (sessionId: string, userId: string, expiresAt: Date) =>
        sql`with forgotten as (
              delete from ended_sessions
              where jti in (select jti from ended_sessions where expires_at < now() limit 100))
            insert into ended_sessions (jti, user_id, expires_at) values (${sessionId}, ${userId}, ${expiresAt})
            on conflict (jti) do nothing`.pipe(Effect.asVoid),
      findUserByUsername: SqlSchema.findOne({
        Request: Schema.String,
        Result: UserRow,
        execute: (username) => sql`select ${userColumns} from users where lower(username) = lower(${username})`
      }),
      findUserByEmail: SqlSchema.findOne({
        Request: Schema.String,
        Result: UserRow,
        execute: (email) =>
          sql`select ${userColumns} from users where lower(email) = lower(${email}) order by created_at limit 1`
      }),
      findUserByIdentity: (provider: string, subject: string) => findUserByIdentity({ provider, subject }),
      usernameTaken: (username: string) =>
        sql`select 1 from users where lower(username) = lower(${username})`.pipe(Effect.map((rows) => rows.length > 0)),
      /** Answers false when the username is taken (also under a concurrent signup). */
      insertUser: (user: { id: string; username: string; email: string | null; passwordHash: string | null }) =>
        sql`insert into users (id, username, email, password_hash)
            values (${user.id}, ${user.username}, ${user.email}, ${user.passwordHash})
            on conflict do nothing returning id`.pipe(Effect.map((rows) => rows.length === 1)),
      setDefaultWorkspace: (userId: string, workspaceId: string) =>
        sql`update users set default_workspace_id = ${workspaceId} where id = ${userId}`,
      /** Replaces the password set at `version` (none when another change came first); answers the new version. */
      setPassword: (userId: string, passwordHash: string, version: number) =>
        Effect.map(
          setPassword({ userId, passwordHash, version }),
          Option.map((row) => row.password_version)
        ),
      /** Replaces a hash made under older parameters; the version stays, so sessions stay valid. */
      rehashPassword: (userId: string, previousHash: string, passwordHash: string) =>
        sql`update users set password_hash = ${passwordHash}
            where id = ${userId} and password_hash = ${previousHash}`,
      /** The emails an OAuth provider vouched for: the user's own (set only by OAuth) and its linked identities'. */
      verifiedEmails: (userId: string) => Effect.map(verifiedEmails(userId), (rows) => rows.map((row) => row.email)),
      insertIdentity: (identity: { provider: string; subject: string; userId: string; email: string }) =>
        sql`insert into user_identities (provider, provider_subject, user_id, email)
            values (${identity.provider}, ${identity.subject}, ${identity.userId}, ${identity.email})
            on conflict do nothing`,

      // ---- organizations, workspaces, memberships
      insertOrganization: (id: string, name: string, ownerId: string) =>
        sql`insert into organizations (id, name) values (${id}, ${name})`.pipe(
          Effect.zipRight(
            sql`insert into organization_members (organization_id, user_id, role) values (${id}, ${ownerId}, 'owner')`
          )
        ),
      insertWorkspace: (workspace: { id: string; organizationId: string; name: string; slug: string }) =>
        sql`insert into workspaces (id, organization_id, name, slug)
            values (${workspace.id}, ${workspace.organizationId}, ${workspace.name}, ${workspace.slug})`.pipe(
          Effect.zipRight(sql`insert into workspace_settings (workspace_id) values (${workspace.id})`)
        ),
      insertMembership: (workspaceId: string, userId: string, role: string) =>
        sql`insert into workspace_members (workspace_id, user_id, role) values (${workspaceId}, ${userId}, ${role})
            on conflict (workspace_id, user_id) do nothing`,
      findMembership: (workspaceId: string, userId: string) => findMembership({ workspaceId, userId }),
      listMemberships: SqlSchema.findAll({
        Request: Schema.String,
        Result: MembershipRow,
        execute: (userId) =>
          sql`select ${membershipColumns} from workspace_members m join workspaces w on w.id = m.workspace_id
              where m.user_id = ${userId} order by m.created_at, w.id`
      }),
      /**
       * Newest first after the member `after` (a page cursor's user id): up to `limit + 1` rows. The position is
       * that member's own stored time, so microseconds never skip or repeat a row.
       */
      listMembers: (workspaceId: string, limit: number, after: Option.Option<string>) =>
        sql`select m.user_id::text as user_id, u.username, m.role, m.created_at as joined_at
            from workspace_members m join users u on u.id = m.user_id
            where m.workspace_id = ${workspaceId}
            ${Option.match(after, {
              onNone: () => sql``,
              onSome: (userId) =>
                sql`and (m.created_at, m.user_id) < (select created_at, user_id from workspace_members
                                                     where workspace_id = ${workspaceId} and user_id = ${userId}::uuid)`
            })}
            order by m.created_at desc, m.user_id desc limit ${limit + 1}`.pipe(Effect.flatMap(decodeMembers)),

      // ---- feature flags
      findFeatureFlags: SqlSchema.findOne({
        Request: Schema.String,
        Result: FeatureFlagsRow,
        execute: (workspaceId) => sql`select ${flagColumns} from workspaces where id = ${workspaceId}`
      }),
      updateFeatureFlags: (workspaceId: string, values: Partial<FeatureFlagsRow>) =>
        sql`update workspaces set ${sql.update(values)} where id = ${workspaceId} returning ${flagColumns}`.pipe(
          Effect.flatMap(decodeFeatureFlags),
          Effect.map(first)
        ),

      // ---- invites
      /** Withdraws the workspace's pending invites to the invite's email (call under its `lockKey`). */
      withdrawPendingInvites: (workspaceId: string, email: string) =>
        sql`delete from team_invites
            where workspace_id = ${workspaceId} and status = 'pending' and lower(email) = lower(${email})`,
      insertInvite: (invite: { id: string; workspaceId: string; email: string; role: string; invitedBy: string }) =>
        insertInvite(invite),
      /** The workspace's pending invites that have not expired, newest first (at most MAX_PENDING_INVITES_PER_WORKSPACE). */
      listPendingInvites: SqlSchema.findAll({
        Request: Schema.Struct({ workspaceId: Schema.String, ttlHours: Schema.Number }),
        Result: InviteRow,
        execute: ({ ttlHours, workspaceId }) =>
          sql`select ${inviteColumns} from team_invites
              where workspace_id = ${workspaceId} and status = 'pending' and created_at > ${expiredBefore(ttlHours)}
              order by created_at desc, id desc`
      }),
      /** Whether the workspace has an unexpired pending invite to the email (a new invite to it replaces that one). */
      hasPendingInvite: (workspaceId: string, email: string, ttlHours: number) =>
        sql`select 1 from team_invites
            where workspace_id = ${workspaceId} and status = 'pending' and lower(email) = lower(${email})
              and created_at > ${expiredBefore(ttlHours)}`.pipe(Effect.map((rows) => rows.length > 0)),
      /** Forgets the workspace's expired invites: nothing can accept or list them any more. */
      deleteExpiredInvites: (workspaceId: string, ttlHours: number) =>
        sql`delete from team_invites
            where workspace_id = ${workspaceId} and status = 'pending' and created_at <= ${expiredBefore(ttlHours)}`,
      /** Accepts every pending, unexpired invite for the email; answers the accepted ones, newest first. */
      acceptInvites: (email: string, userId: string, ttlHours: number) => acceptInvites({ email, userId, ttlHours })
    })
  })
}) {}
