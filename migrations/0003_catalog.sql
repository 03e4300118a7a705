-- The governance catalog: agent profiles, policies, label policies, tool
-- metadata and knowledge sources. All keyed by workspace.

create table agents (
  workspace_id text not null references workspaces (id) on delete cascade,
  agent_id text not null,
  display_name text not null,
  -- the normalized profile as returned by the API
  profile jsonb not null,
  source_text text not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (workspace_id, agent_id)
);

create table policies (
  workspace_id text not null references workspaces (id) on delete cascade,
  id text not null,
  description text not null,
  family text not null,
  severity text not null,
  action text not null,
  enabled boolean not null,
  owner_agent_id text,
  -- the authored document, verbatim, and its parsed form
  source_yaml text not null,
  document jsonb not null,
  -- null for authored policies; e.g. 'agent_profile' for generated ones
  origin text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (workspace_id, id)
);
create index policies_owner on policies (workspace_id, owner_agent_id);

create table label_policies (
  workspace_id text not null references workspaces (id) on delete cascade,
  origin text not null,
  enabled boolean not null default true,
  confidentiality jsonb,
  integrity jsonb,
  trust jsonb,
  updated_at timestamptz not null default now(),
  primary key (workspace_id, origin)
);

create table tool_metadata (
  workspace_id text not null references workspaces (id) on delete cascade,
  tool text not null,
  enabled boolean not null default true,
  metadata jsonb not null,
  updated_at timestamptz not null default now(),
  primary key (workspace_id, tool)
);

create table knowledge_sources (
  id text primary key,
  workspace_id text not null references workspaces (id) on delete cascade,
  kind text not null,
  title text not null,
  location text,
  status text not null default 'draft',
  metadata jsonb not null default '{}'::jsonb,
  file_name text,
  media_type text,
  byte_size integer,
  data bytea,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  last_indexed_at timestamptz
);
create index knowledge_sources_workspace on knowledge_sources (workspace_id, created_at desc);
