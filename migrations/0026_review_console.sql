-- The review console (issue 21): approval denials, review queues, stored hardening results,
-- and the trace lookup the approvals queue reads.

-- A denied intent stays denied: deciding reads this beside the grants (Authorization.ts).
create table approval_denials (
  workspace_id text not null references workspaces (id) on delete cascade,
  intent_id text not null,
  denied_by text not null,
  reason text,
  created_at timestamptz(3) not null default now(),
  primary key (workspace_id, intent_id)
);

-- Only decisions awaiting approval are indexed, so the hot insert path of other traces pays nothing more.
create index traces_awaiting_approval on traces (workspace_id, intent_id, created_at)
  where payload -> 'response' ->> 'status' = 'awaiting_approval';

create table review_queues (
  id text primary key,
  workspace_id text not null references workspaces (id) on delete cascade,
  name text not null,
  rules jsonb not null,
  sample_rate double precision not null,
  created_at timestamptz(3) not null default now(),
  updated_at timestamptz(3) not null default now()
);
create index review_queues_workspace on review_queues (workspace_id, created_at desc, id desc);
create trigger audit after insert or update or delete on review_queues
  for each row execute function audit_row_change('review_queue', 'id', 'workspace_id', '');

-- The last hardening run of a job, as answered by POST /v1/redteam/jobs/{id}/harden.
create table redteam_hardening_results (
  workspace_id text not null references workspaces (id) on delete cascade,
  job_id text not null,
  result jsonb not null,
  created_at timestamptz(3) not null default now(),
  primary key (workspace_id, job_id)
);
