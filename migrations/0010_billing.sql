-- LLM usage records, budget alert configs, their meters and firings, and
-- signed webhook deliveries of firings with every attempt.

-- One row per upstream LLM call, written once by the llm-usage consumer.
create table llm_usage_events (
  id text primary key,
  workspace_id text not null references workspaces (id) on delete cascade,
  api_key_id text,
  principal_id text,
  agent_id text,
  request_id text not null,
  kind text not null,
  model text not null,
  prompt_tokens bigint not null,
  completion_tokens bigint not null,
  currency text not null,
  cost_minor bigint not null,
  cost_usd_nanos numeric(38, 0) not null,
  unpriced boolean not null default false,
  effective_at timestamptz(3) not null,
  metadata jsonb not null default 'null'::jsonb,
  stored_at timestamptz not null default now()
);
create index llm_usage_workspace_time on llm_usage_events (workspace_id, effective_at desc, id desc);

-- "window" is reserved in SQL, hence time_window.
create table budget_alert_configs (
  id text primary key,
  workspace_id text not null references workspaces (id) on delete cascade,
  name text not null,
  meter text not null,
  threshold_type text not null,
  threshold_value bigint not null,
  time_window text not null,
  enabled boolean not null default true,
  principal_id text,
  webhook_url text,
  -- random, not secret by itself: the signing secret is derived from it and the service secret
  secret_salt text not null,
  created_at timestamptz(3) not null default now(),
  updated_at timestamptz not null default now()
);
create index budget_alert_configs_workspace on budget_alert_configs (workspace_id, meter, created_at desc);

-- Running totals per UTC window, for the whole workspace (principal_id '') and per principal.
create table budget_meter_totals (
  workspace_id text not null references workspaces (id) on delete cascade,
  meter text not null,
  time_window text not null,
  window_start timestamptz not null,
  principal_id text not null,
  amount bigint not null default 0,
  primary key (workspace_id, meter, time_window, window_start, principal_id)
);

-- At most one firing per config and window: the unique constraint is the guarantee.
create table budget_alert_firings (
  id text primary key,
  config_id text not null references budget_alert_configs (id) on delete cascade,
  workspace_id text not null,
  principal_id text,
  meter text not null,
  currency text not null,
  cap_minor bigint not null,
  spent_minor bigint not null,
  time_window text not null,
  window_start timestamptz not null,
  fired_at timestamptz(3) not null default now(),
  payload jsonb not null,
  unique (config_id, time_window, window_start)
);
create index budget_alert_firings_config on budget_alert_firings (config_id, fired_at desc);

-- One delivery per firing with a webhook; id is the webhook-id header (same on every attempt).
create table webhook_deliveries (
  id text primary key,
  firing_id text not null unique references budget_alert_firings (id) on delete cascade,
  config_id text not null references budget_alert_configs (id) on delete cascade,
  workspace_id text not null,
  url text not null,
  body text not null,
  status text not null,
  attempt_count integer not null default 0,
  next_attempt_at timestamptz,
  created_at timestamptz(3) not null default now(),
  updated_at timestamptz not null default now()
);
create index webhook_deliveries_due on webhook_deliveries (next_attempt_at) where status = 'pending';
create index webhook_deliveries_config on webhook_deliveries (config_id, created_at desc);

create table webhook_delivery_attempts (
  delivery_id text not null references webhook_deliveries (id) on delete cascade,
  attempt integer not null,
  attempted_at timestamptz not null,
  duration_ms integer not null,
  response_status integer,
  error text,
  succeeded boolean not null,
  primary key (delivery_id, attempt)
);
