-- Runs, their ordered events, and human review events on traces.

create table runs (
  id text primary key,
  workspace_id text not null references workspaces (id) on delete cascade,
  agent_id text not null,
  environment_id text not null,
  environment text not null,
  external_id text,
  kind text not null,
  status text not null,
  metadata jsonb not null default 'null'::jsonb,
  -- kept current by the run-counters consumer of the decisions topic
  blocked_count integer not null default 0,
  escalated_count integer not null default 0,
  rewritten_count integer not null default 0,
  trace_count integer not null default 0,
  p95_latency_ms integer not null default 0,
  -- the last sequence handed out; appends take the row lock, so sequences are gap-free
  last_sequence integer not null default 0,
  created_at timestamptz not null default now(),
  started_at timestamptz,
  ended_at timestamptz,
  updated_at timestamptz not null default now()
);
create index runs_workspace_created on runs (workspace_id, created_at desc, id desc);
create index runs_workspace_external on runs (workspace_id, external_id);

create table run_events (
  id text primary key,
  run_id text not null references runs (id) on delete cascade,
  workspace_id text not null,
  sequence integer not null,
  kind text not null,
  label text,
  input_summary text,
  output_summary text,
  metadata jsonb not null default 'null'::jsonb,
  occurred_at timestamptz not null,
  created_at timestamptz not null default now(),
  unique (run_id, sequence)
);

create table review_events (
  id text primary key,
  trace_id text not null references traces (id) on delete cascade,
  workspace_id text not null,
  run_id text,
  run_event_id text,
  reviewer_id text not null,
  outcome text not null,
  reason_codes jsonb not null default '[]'::jsonb,
  note text,
  metadata jsonb not null default 'null'::jsonb,
  created_at timestamptz not null default now()
);
create index review_events_trace on review_events (workspace_id, trace_id, created_at desc);
