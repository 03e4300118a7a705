-- LLM gateway: provider connections (keys encrypted at rest), routes, the
-- workspace's LLM prices, and the budget ledger with its open reservations.

create table provider_connections (
  id text primary key,
  workspace_id text not null references workspaces (id) on delete cascade,
  display_name text not null,
  kind text not null,
  base_url text not null,
  default_model text,
  -- AES-256-GCM: 'v1:' || base64(iv || tag || ciphertext), bound to (workspace_id, id)
  encrypted_api_key text not null,
  created_at timestamptz(3) not null default now(),
  updated_at timestamptz(3) not null default now()
);
create index provider_connections_workspace on provider_connections (workspace_id, created_at desc, id desc);

create table gateway_routes (
  id text primary key,
  workspace_id text not null references workspaces (id) on delete cascade,
  agent_id text not null,
  display_name text not null,
  provider_connection_id text not null references provider_connections (id) on delete cascade,
  created_at timestamptz(3) not null default now(),
  updated_at timestamptz(3) not null default now()
);
create index gateway_routes_workspace on gateway_routes (workspace_id, created_at desc, id desc);

create table llm_prices (
  workspace_id text not null references workspaces (id) on delete cascade,
  model text not null,
  currency text not null default 'usd',
  input_per_million_minor bigint not null check (input_per_million_minor >= 0),
  output_per_million_minor bigint not null check (output_per_million_minor >= 0),
  created_at timestamptz(3) not null default now(),
  updated_at timestamptz(3) not null default now(),
  primary key (workspace_id, model)
);

-- Spend and open reservations per workspace and budget window (UTC day or
-- month), in US dollar nanos so that sums stay exact. Every priced gateway
-- call adds to both its day and its month row; strict admission reserves its
-- worst case on the active window's row with one conditional UPDATE.
create table llm_budget_ledger (
  workspace_id text not null references workspaces (id) on delete cascade,
  window_kind text not null check (window_kind in ('day', 'month')),
  window_start timestamptz not null,
  spent_usd_nanos bigint not null default 0,
  reserved_usd_nanos bigint not null default 0 check (reserved_usd_nanos >= 0),
  updated_at timestamptz not null default now(),
  primary key (workspace_id, window_kind, window_start)
);

-- One row per strict admission still in flight; deleted when it settles. A
-- process that dies mid-call leaves its row, and any process releases it
-- after `expires_at`.
create table llm_budget_reservations (
  id text primary key,
  workspace_id text not null references workspaces (id) on delete cascade,
  window_kind text not null,
  window_start timestamptz not null,
  amount_usd_nanos bigint not null check (amount_usd_nanos >= 0),
  created_at timestamptz not null default now(),
  expires_at timestamptz not null
);
create index llm_budget_reservations_expiry on llm_budget_reservations (expires_at);
