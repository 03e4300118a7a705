-- Identity and tenancy: users, organizations, workspaces and memberships,
-- environments (with checker-mode overrides), workspace settings, runtime
-- API keys and team invites.

create table users (
  id uuid primary key,
  username text not null,
  email text,
  -- scrypt$N$r$p$salt$hash over the client's SHA-256 digest; null for OAuth-only users
  password_hash text,
  -- bumped on every password change; session JWTs carry it, older ones are refused
  password_version integer not null default 1,
  default_workspace_id text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index users_username_unique on users (lower(username));
create index users_email on users (lower(email));

create table user_identities (
  provider text not null,
  provider_subject text not null,
  user_id uuid not null references users (id) on delete cascade,
  email text not null,
  created_at timestamptz not null default now(),
  primary key (provider, provider_subject)
);

create table organizations (
  id text primary key,
  name text not null,
  created_at timestamptz not null default now()
);

create table organization_members (
  organization_id text not null references organizations (id) on delete cascade,
  user_id uuid not null references users (id) on delete cascade,
  role text not null,
  created_at timestamptz not null default now(),
  primary key (organization_id, user_id)
);

create table workspaces (
  id text primary key,
  organization_id text not null references organizations (id) on delete cascade,
  name text not null,
  slug text not null,
  is_attacks_enabled boolean not null default true,
  is_knowledge_base_enabled boolean not null default true,
  is_mcp_gateway_enabled boolean not null default true,
  created_at timestamptz not null default now()
);

create table workspace_members (
  workspace_id text not null references workspaces (id) on delete cascade,
  user_id uuid not null references users (id) on delete cascade,
  role text not null check (role in ('owner', 'admin', 'member')),
  created_at timestamptz not null default now(),
  primary key (workspace_id, user_id)
);
create index workspace_members_user on workspace_members (user_id);

create table environments (
  id text primary key,
  workspace_id text not null references workspaces (id) on delete cascade,
  name text not null,
  slug text not null,
  description text,
  is_default boolean not null default false,
  approval_checker_mode text,
  flow_checker_mode text,
  memory_checker_mode text,
  param_checker_mode text,
  checker_modes_updated_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (workspace_id, slug)
);

create table workspace_settings (
  workspace_id text primary key references workspaces (id) on delete cascade,
  approval_checker_mode text not null default 'off',
  flow_checker_mode text not null default 'off',
  memory_checker_mode text not null default 'off',
  param_checker_mode text not null default 'off',
  data_handling_mode text not null default 'raw_allowed',
  default_action text not null default 'permit',
  escalation_webhook_url text,
  retention_days text not null default '90',
  telemetry_enabled boolean not null default true,
  config jsonb not null default '{}'::jsonb,
  updated_at timestamptz not null default now()
);

create table api_keys (
  id text primary key,
  workspace_id text not null references workspaces (id) on delete cascade,
  environment_id text not null references environments (id),
  name text not null,
  prefix text not null,
  -- SHA-256 of the plaintext: keys carry 256 random bits, so a fast hash is enough
  key_hash text not null unique,
  status text not null default 'active' check (status in ('active', 'revoked')),
  created_by uuid not null references users (id),
  created_at timestamptz not null default now(),
  last_used_at timestamptz,
  revoked_at timestamptz
);
create index api_keys_workspace on api_keys (workspace_id, created_at desc);

create table team_invites (
  id text primary key,
  workspace_id text not null references workspaces (id) on delete cascade,
  email text not null,
  role text not null check (role in ('owner', 'admin', 'member')),
  invited_by uuid not null references users (id),
  status text not null default 'pending' check (status in ('pending', 'accepted')),
  created_at timestamptz not null default now(),
  accepted_at timestamptz,
  accepted_by uuid references users (id)
);
create index team_invites_pending_email on team_invites (lower(email)) where status = 'pending';
