-- Versions of agent profiles, tool metadata and label policies (like policy_versions,
-- migration 0018), and policy sets: what decided each decision, stored once per digest.

alter table agents add column version integer not null default 1;
alter table tool_metadata add column version integer not null default 1;
alter table label_policies add column version integer not null default 1;

-- Every write of an agent profile, tool metadata entry or label policy records the content it made
-- current. No foreign key to the resource: a deleted one's history stays readable, and one created
-- again under the same key continues its numbering.
create table catalog_versions (
  workspace_id text not null references workspaces (id) on delete cascade,
  -- 'agent' (key: agent_id), 'tool_metadata' (key: tool), 'label_policy' (key: origin)
  resource text not null check (resource in ('agent', 'tool_metadata', 'label_policy')),
  key text not null,
  version integer not null,
  -- the entry as the API returns it: {profile, source_text}, {enabled, metadata} or {enabled, policy}
  content jsonb not null,
  -- 'user' (a user id) or 'key' (an API key id); 'system' for the rows this migration backfills
  created_by_kind text not null,
  created_by_id text not null,
  created_at timestamptz(3) not null default now(),
  primary key (workspace_id, resource, key, version)
);

insert into catalog_versions (workspace_id, resource, key, version, content, created_by_kind, created_by_id, created_at)
  select workspace_id, 'agent', agent_id, 1, jsonb_build_object('profile', profile, 'source_text', source_text),
         'system', 'migration-0022', updated_at from agents;
insert into catalog_versions (workspace_id, resource, key, version, content, created_by_kind, created_by_id, created_at)
  select workspace_id, 'tool_metadata', tool, 1, jsonb_build_object('enabled', enabled, 'metadata', metadata),
         'system', 'migration-0022', updated_at from tool_metadata;
insert into catalog_versions (workspace_id, resource, key, version, content, created_by_kind, created_by_id, created_at)
  select workspace_id, 'label_policy', origin, 1,
         jsonb_build_object('enabled', enabled, 'policy', jsonb_build_object('origin', origin,
           'confidentiality', confidentiality, 'integrity', integrity, 'trust', trust)),
         'system', 'migration-0022', updated_at from label_policies;

-- A policy set (docs/policies.md, "Policy-set digest"): the versions, modes and default action
-- that decided, named by the sha-256 of their canonical JSON. Written (if absent) with the first
-- trace that names it; immutable after.
create table policy_sets (
  workspace_id text not null references workspaces (id) on delete cascade,
  digest text not null,
  content jsonb not null,
  created_at timestamptz(3) not null default now(),
  primary key (workspace_id, digest)
);

-- Null on traces written before this migration (and on a decision that failed closed unread).
alter table traces add column policy_set_digest text;
