/** SQL of the identity domain. Every workspace-owned query takes the workspace id. */
import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { dieOnErrors } from "../platform/Sql.js"

export interface UserRow {
  readonly id: string
  readonly username: string
  readonly email: string | null
  readonly password_hash: string | null
  readonly password_version: number
  readonly default_workspace_id: string | null
}

export interface MembershipRow {
  readonly id: string
  readonly name: string
  readonly slug: string
  readonly organization_id: string
  readonly role: "owner" | "admin" | "member"
  readonly is_attacks_enabled: boolean
  readonly is_knowledge_base_enabled: boolean
  readonly is_mcp_gateway_enabled: boolean
}

export interface EnvironmentRow {
  readonly id: string
  readonly workspace_id: string
  readonly name: string
  readonly slug: string
  readonly description: string | null
  readonly is_default: boolean
  readonly approval_checker_mode: string | null
  readonly flow_checker_mode: string | null
  readonly memory_checker_mode: string | null
  readonly param_checker_mode: string | null
  readonly checker_modes_updated_at: Date | null
  readonly created_at: Date
  readonly updated_at: Date
}

export interface SettingsRow {
  readonly workspace_id: string
  readonly approval_checker_mode: string
  readonly flow_checker_mode: string
  readonly memory_checker_mode: string
  readonly param_checker_mode: string
  readonly data_handling_mode: string
  readonly default_action: string
  readonly escalation_webhook_url: string | null
  readonly retention_days: string
  readonly telemetry_enabled: boolean
  readonly config: Record<string, unknown>
  readonly updated_at: Date
}

export interface ApiKeyRow {
  readonly id: string
  readonly workspace_id: string
  readonly environment_id: string
  readonly environment: string
  readonly name: string
  readonly prefix: string
  readonly status: "active" | "revoked"
  readonly created_by: string
  readonly created_at: Date
  readonly last_used_at: Date | null
}

export interface InviteRow {
  readonly id: string
  readonly workspace_id: string
  readonly email: string
  readonly role: "owner" | "admin" | "member"
  readonly status: "pending" | "accepted"
  readonly created_at: Date
}

const first = <A>(rows: ReadonlyArray<A>) => Option.fromNullable(rows[0])

export class IdentityRepo extends Effect.Service<IdentityRepo>()("identity/IdentityRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const membershipColumns = sql`w.id, w.name, w.slug, w.organization_id, m.role,
      w.is_attacks_enabled, w.is_knowledge_base_enabled, w.is_mcp_gateway_enabled`
    const environmentColumns = sql`e.id, e.workspace_id, e.name, e.slug, e.description, e.is_default,
      e.approval_checker_mode, e.flow_checker_mode, e.memory_checker_mode, e.param_checker_mode,
      e.checker_modes_updated_at, e.created_at, e.updated_at`
    const apiKeyColumns = sql`k.id, k.workspace_id, k.environment_id, e.slug as environment, k.name, k.prefix,
      k.status, k.created_by::text as created_by, k.created_at, k.last_used_at`

    return dieOnErrors({
      /** Serializes transactions that take the same key (held until commit). */
      lockKey: (key: string) => sql`select pg_advisory_xact_lock(hashtextextended(${key}, 0))`,

      // ---- users
      findUserById: (id: string) =>
        sql<UserRow>`select id::text as id, username, email, password_hash, password_version, default_workspace_id
                     from users where id = ${id}`.pipe(Effect.map(first)),
      findUserByUsername: (username: string) =>
        sql<UserRow>`select id::text as id, username, email, password_hash, password_version, default_workspace_id
                     from users where lower(username) = lower(${username})`.pipe(Effect.map(first)),
      findUserByEmail: (email: string) =>
        sql<UserRow>`select id::text as id, username, email, password_hash, password_version, default_workspace_id
                     from users where lower(email) = lower(${email}) order by created_at limit 1`.pipe(
          Effect.map(first)
        ),
      findUserByIdentity: (provider: string, subject: string) =>
        sql<UserRow>`select u.id::text as id, u.username, u.email, u.password_hash, u.password_version, u.default_workspace_id
                     from user_identities i join users u on u.id = i.user_id
                     where i.provider = ${provider} and i.provider_subject = ${subject}`.pipe(Effect.map(first)),
      usernameTaken: (username: string) =>
        sql`select 1 from users where lower(username) = lower(${username})`.pipe(Effect.map((rows) => rows.length > 0)),
      /** Answers false when the username is taken (also under a concurrent signup). */
      insertUser: (user: { id: string; username: string; email: string | null; passwordHash: string | null }) =>
        sql`insert into users (id, username, email, password_hash)
            values (${user.id}, ${user.username}, ${user.email}, ${user.passwordHash})
            on conflict do nothing returning id`.pipe(Effect.map((rows) => rows.length === 1)),
      setDefaultWorkspace: (userId: string, workspaceId: string) =>
        sql`update users set default_workspace_id = ${workspaceId} where id = ${userId}`,
      setPassword: (userId: string, passwordHash: string) =>
        sql<{ password_version: number }>`update users set password_hash = ${passwordHash},
            password_version = password_version + 1, updated_at = now()
            where id = ${userId} returning password_version`.pipe(Effect.map((rows) => rows[0]!.password_version)),
      /** Replaces a hash made under older parameters; the version stays, so sessions stay valid. */
      rehashPassword: (userId: string, previousHash: string, passwordHash: string) =>
        sql`update users set password_hash = ${passwordHash}
            where id = ${userId} and password_hash = ${previousHash}`,
      /** The emails an OAuth provider vouched for: the user's own (set only by OAuth) and its linked identities'. */
      verifiedEmails: (userId: string) =>
        sql<{ email: string }>`select lower(email) as email from users where id = ${userId} and email is not null
                               union select lower(email) from user_identities where user_id = ${userId}`.pipe(
          Effect.map((rows) => rows.map((row) => row.email))
        ),
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
      findMembership: (workspaceId: string, userId: string) =>
        sql<MembershipRow>`select ${membershipColumns} from workspace_members m join workspaces w on w.id = m.workspace_id
                           where m.workspace_id = ${workspaceId} and m.user_id = ${userId}`.pipe(Effect.map(first)),
      listMemberships: (userId: string) =>
        sql<MembershipRow>`select ${membershipColumns} from workspace_members m join workspaces w on w.id = m.workspace_id
                           where m.user_id = ${userId} order by m.created_at, w.id`,
      listMembers: (workspaceId: string) =>
        sql<{ user_id: string; username: string; role: string; joined_at: Date }>`
          select m.user_id::text as user_id, u.username, m.role, m.created_at as joined_at
          from workspace_members m join users u on u.id = m.user_id
          where m.workspace_id = ${workspaceId} order by m.created_at`,

      // ---- invites
      insertInvite: (invite: { id: string; workspaceId: string; email: string; role: string; invitedBy: string }) =>
        sql<InviteRow>`insert into team_invites (id, workspace_id, email, role, invited_by)
                       values (${invite.id}, ${invite.workspaceId}, ${invite.email}, ${invite.role}, ${invite.invitedBy})
                       returning id, workspace_id, email, role, status, created_at`.pipe(
          Effect.map((rows) => rows[0]!)
        ),
      listInvites: (workspaceId: string) =>
        sql<InviteRow>`select id, workspace_id, email, role, status, created_at from team_invites
                       where workspace_id = ${workspaceId} order by created_at desc`,
      /** Accepts every pending invite for the email; answers the accepted ones. */
      acceptInvites: (email: string, userId: string) =>
        sql<InviteRow>`update team_invites set status = 'accepted', accepted_at = now(), accepted_by = ${userId}
                       where status = 'pending' and lower(email) = lower(${email})
                       returning id, workspace_id, email, role, status, created_at`,

      // ---- environments
      insertEnvironment: (environment: {
        id: string
        workspaceId: string
        name: string
        slug: string
        description: string | null
        isDefault: boolean
      }) =>
        sql<EnvironmentRow>`insert into environments (id, workspace_id, name, slug, description, is_default)
          values (${environment.id}, ${environment.workspaceId}, ${environment.name}, ${environment.slug},
                  ${environment.description}, ${environment.isDefault})
          on conflict (workspace_id, slug) do nothing
          returning *`.pipe(Effect.map(first)),
      listEnvironments: (workspaceId: string) =>
        sql<EnvironmentRow>`select ${environmentColumns} from environments e
                            where e.workspace_id = ${workspaceId} order by e.is_default desc, e.created_at desc`,
      findEnvironment: (workspaceId: string, id: string) =>
        sql<EnvironmentRow>`select ${environmentColumns} from environments e
                            where e.workspace_id = ${workspaceId} and e.id = ${id}`.pipe(Effect.map(first)),
      findDefaultEnvironment: (workspaceId: string) =>
        sql<EnvironmentRow>`select ${environmentColumns} from environments e
                            where e.workspace_id = ${workspaceId} and e.is_default`.pipe(Effect.map(first)),
      slugTaken: (workspaceId: string, slug: string) =>
        sql`select 1 from environments where workspace_id = ${workspaceId} and slug = ${slug}`.pipe(
          Effect.map((rows) => rows.length > 0)
        ),
      updateEnvironment: (workspaceId: string, id: string, patch: { name?: string; description?: string | null }) =>
        sql<EnvironmentRow>`update environments set
            name = coalesce(${patch.name ?? null}, name),
            description = case when ${patch.description !== undefined} then ${patch.description ?? null} else description end,
            updated_at = now()
          where workspace_id = ${workspaceId} and id = ${id} returning *`.pipe(Effect.map(first)),
      deleteEnvironment: (workspaceId: string, id: string) =>
        sql`delete from environments where workspace_id = ${workspaceId} and id = ${id}`,
      activeKeysInEnvironment: (workspaceId: string, id: string) =>
        sql<{ count: string }>`select count(*)::text as count from api_keys
                               where workspace_id = ${workspaceId} and environment_id = ${id} and status = 'active'`.pipe(
          Effect.map((rows) => Number(rows[0]?.count ?? 0))
        ),
      replaceCheckerModes: (
        workspaceId: string,
        id: string,
        modes: { approval: string | null; flow: string | null; memory: string | null; param: string | null }
      ) =>
        sql<EnvironmentRow>`update environments set approval_checker_mode = ${modes.approval},
            flow_checker_mode = ${modes.flow}, memory_checker_mode = ${modes.memory}, param_checker_mode = ${modes.param},
            checker_modes_updated_at = now()
          where workspace_id = ${workspaceId} and id = ${id} returning *`.pipe(Effect.map(first)),

      // ---- settings
      findSettings: (workspaceId: string) =>
        sql<SettingsRow>`select * from workspace_settings where workspace_id = ${workspaceId}`.pipe(Effect.map(first)),
      updateSettings: (workspaceId: string, values: Record<string, unknown>) =>
        sql<SettingsRow>`update workspace_settings set ${sql.update(values)}, updated_at = now()
                         where workspace_id = ${workspaceId} returning *`.pipe(Effect.map(first)),

      // ---- API keys
      insertApiKey: (key: {
        id: string
        workspaceId: string
        environmentId: string
        name: string
        prefix: string
        keyHash: string
        createdBy: string
      }) =>
        sql`insert into api_keys (id, workspace_id, environment_id, name, prefix, key_hash, created_by)
            values (${key.id}, ${key.workspaceId}, ${key.environmentId}, ${key.name}, ${key.prefix}, ${key.keyHash}, ${key.createdBy})`,
      listApiKeys: (workspaceId: string, ids?: ReadonlyArray<string>) =>
        sql<ApiKeyRow>`select ${apiKeyColumns} from api_keys k join environments e on e.id = k.environment_id
                       where k.workspace_id = ${workspaceId}
                       ${ids === undefined ? sql`` : sql`and k.id in ${sql.in(ids)}`}
                       order by k.created_at desc, k.id desc`,
      revokeApiKeys: (workspaceId: string, ids: ReadonlyArray<string>) =>
        sql`update api_keys set status = 'revoked', revoked_at = coalesce(revoked_at, now())
            where workspace_id = ${workspaceId} and id in ${sql.in(ids)}`,
      findActiveKeyByHash: (keyHash: string) =>
        sql<{ id: string; workspace_id: string; environment_id: string }>`
          select id, workspace_id, environment_id from api_keys where key_hash = ${keyHash} and status = 'active'`.pipe(
          Effect.map(first)
        ),
      keyIsActive: (id: string) =>
        sql`select 1 from api_keys where id = ${id} and status = 'active'`.pipe(Effect.map((rows) => rows.length > 0)),
      touchApiKeys: (lastUsed: ReadonlyArray<{ id: string; at: Date }>) =>
        Effect.forEach(
          lastUsed,
          ({ at, id }) =>
            sql`update api_keys set last_used_at = greatest(coalesce(last_used_at, ${at}), ${at}) where id = ${id}`,
          { discard: true }
        )
    })
  })
}) {}
