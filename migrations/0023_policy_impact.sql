-- Impact replay (docs/policies.md, "Lifecycle"): jobs that replay retained
-- decision inputs (the traces' payloads, kept per data_handling_mode) against
-- a candidate policy set, and the setting that makes a completed one a
-- precondition of enabling a policy.
alter table workspace_settings add column require_impact_before_enable boolean not null default false;

create table impact_jobs (
  id text primary key,
  workspace_id text not null references workspaces (id) on delete cascade,
  -- the request as validated, with the stored documents of enable_ids as they were when it was made
  request jsonb not null,
  -- digests of the documents this job evaluates as enabled (candidates and enable_ids): what it vouches for
  document_digests text[] not null,
  status text not null,
  total integer not null default 0,
  replayed integer not null default 0,
  result jsonb,
  result_digest text,
  error text,
  created_by text not null,
  worker_id text,
  heartbeat_at timestamptz,
  resume_count integer not null default 0,
  created_at timestamptz(3) not null default now(),
  started_at timestamptz(3),
  finished_at timestamptz(3)
);
create index impact_jobs_workspace_created on impact_jobs (workspace_id, created_at desc, id desc);
create index impact_jobs_queued on impact_jobs (created_at, id) where status = 'queued';
create index impact_jobs_digests on impact_jobs using gin (document_digests) where status = 'completed';
