-- Decision traces, signed receipts and human approval grants.

create table traces (
  id text primary key,
  workspace_id text not null references workspaces (id) on delete cascade,
  agent_id text not null,
  environment_id text not null,
  environment text not null,
  run_id text,
  run_event_id text,
  session_id text,
  intent_id text not null,
  receipt_id text not null,
  decision text not null,
  domain text not null,
  elapsed_ms integer not null,
  -- the request and the decision as kept under the workspace's data handling
  payload jsonb not null,
  latest_review_outcome text,
  latest_reviewed_at timestamptz,
  created_at timestamptz not null default now()
);
create index traces_workspace_created on traces (workspace_id, created_at desc, id desc);
create index traces_workspace_session on traces (workspace_id, session_id, created_at desc);
create index traces_workspace_run on traces (workspace_id, run_id, created_at desc);

create table receipts (
  id text primary key,
  workspace_id text not null references workspaces (id) on delete cascade,
  trace_id text not null,
  -- compact JWS (EdDSA) over the decision's canonical content
  jws text not null,
  created_at timestamptz not null default now()
);

create table approval_grants (
  workspace_id text not null references workspaces (id) on delete cascade,
  intent_id text not null,
  granted_by text not null,
  note text,
  expires_at timestamptz not null,
  created_at timestamptz not null default now(),
  primary key (workspace_id, intent_id)
);
