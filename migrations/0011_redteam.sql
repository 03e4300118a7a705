-- Red team: saved attack plans, jobs (claimed by stream workers), one row per
-- attack (its record and its session with events), and share links (tokens
-- stored only as SHA-256 hashes).

create table redteam_plans (
  id text primary key,
  workspace_id text not null references workspaces (id) on delete cascade,
  agent_id text not null,
  name text not null,
  paths jsonb not null,
  unmapped_node_types jsonb not null,
  vectors jsonb not null,
  created_at timestamptz(3) not null default now()
);
create index redteam_plans_agent on redteam_plans (workspace_id, agent_id, created_at desc);

create table redteam_jobs (
  id text primary key,
  workspace_id text not null references workspaces (id) on delete cascade,
  environment_id text not null,
  -- null for the demo target dispatched without an agent
  agent_id text,
  profile text not null,
  target text not null,
  -- the agent profile the attacks were generated from, frozen at dispatch so a resumed job replays the same cases
  agent_profile jsonb not null,
  status text not null,
  error text,
  attacks integer not null default 0,
  landed integer not null default 0,
  blocked integer not null default 0,
  -- which worker holds a running job, and when it last said so
  worker_id text,
  heartbeat_at timestamptz,
  resume_count integer not null default 0,
  created_at timestamptz(3) not null default now(),
  started_at timestamptz,
  finished_at timestamptz,
  updated_at timestamptz not null default now()
);
create index redteam_jobs_workspace_created on redteam_jobs (workspace_id, created_at desc, id desc);
create index redteam_jobs_queued on redteam_jobs (created_at) where status = 'queued';
create index redteam_jobs_running on redteam_jobs (heartbeat_at) where status = 'running';

create table redteam_attacks (
  job_id text not null references redteam_jobs (id) on delete cascade,
  workspace_id text not null,
  seq integer not null,
  case_id text not null,
  attack text not null,
  technique text not null,
  category text not null,
  goal text not null,
  severity text not null,
  kind text not null,
  trial_index integer not null,
  session_id text not null,
  prompt text not null,
  reply text,
  outcome text not null,
  landed boolean not null,
  evidence text not null,
  -- what a guardrail would have to match to stop it (the judge's substrates of the unguarded output)
  substrates jsonb not null default '[]'::jsonb,
  trace_id text,
  error text,
  events jsonb not null,
  created_at timestamptz(3) not null default now(),
  primary key (job_id, seq)
);
create index redteam_attacks_workspace on redteam_attacks (workspace_id, job_id desc, seq);

create table redteam_share_links (
  token_hash text primary key,
  workspace_id text not null references workspaces (id) on delete cascade,
  job_id text not null references redteam_jobs (id) on delete cascade,
  compare_job_id text references redteam_jobs (id) on delete cascade,
  created_by text not null,
  created_at timestamptz(3) not null default now(),
  expires_at timestamptz(3) not null,
  revoked_at timestamptz
);
