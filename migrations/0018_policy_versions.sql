-- Policy versions: every create, replace (PUT), rollback, pack install and
-- generation records the document it made current. Not tied to `policies`
-- by a foreign key, so a deleted policy's history stays readable; a policy
-- created again under the same id continues its numbering.
alter table policies add column version integer not null default 1;

create table policy_versions (
  workspace_id text not null references workspaces (id) on delete cascade,
  policy_id text not null,
  version integer not null,
  source_yaml text not null,
  document jsonb not null,
  enabled boolean not null,
  -- 'user' (a user id) or 'key' (an API key id); 'system' for the rows this migration backfills
  created_by_kind text not null,
  created_by_id text not null,
  created_at timestamptz(3) not null default now(),
  primary key (workspace_id, policy_id, version)
);

insert into policy_versions (workspace_id, policy_id, version, source_yaml, document, enabled,
                             created_by_kind, created_by_id, created_at)
  select workspace_id, id, 1, source_yaml, document, enabled, 'system', 'migration-0018', updated_at from policies;
