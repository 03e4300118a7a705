-- Platform event plumbing: the transactional outbox, the embedded event log,
-- consumer positions and the per-consumer dedupe of applied events.

-- Rows written in the same transaction as a state change; the relay publishes
-- them in id order to the event log and then deletes them.
create table outbox (
  id bigserial primary key,
  event_id uuid not null unique,
  topic text not null,
  key text not null,
  value text not null,
  headers jsonb not null default '{}'::jsonb,
  created_at timestamptz not null default now()
);

-- The embedded event log (used when KAFKA_BROKERS is unset): append-only,
-- read by cursor per consumer group. Appends are serialized by an advisory
-- lock, so offsets become visible in order.
create table event_log (
  "offset" bigserial primary key,
  topic text not null,
  key text not null,
  event_id uuid not null,
  value text not null,
  headers jsonb not null default '{}'::jsonb,
  created_at timestamptz not null default now()
);
create index event_log_topic_offset on event_log (topic, "offset");

-- Position of each consumer group in the embedded log (next offset to read is position + 1).
create table consumer_positions (
  group_id text not null,
  topic text not null,
  position bigint not null,
  updated_at timestamptz not null default now(),
  primary key (group_id, topic)
);

-- Events whose effect a consumer group has applied; written in the same
-- transaction as the effect, so a redelivered event is skipped.
create table processed_events (
  group_id text not null,
  event_id uuid not null,
  processed_at timestamptz not null default now(),
  primary key (group_id, event_id)
);

-- Events a consumer could not apply after its retries; kept for operators.
create table dead_letters (
  id bigserial primary key,
  group_id text not null,
  topic text not null,
  key text not null,
  event_id uuid not null,
  value text not null,
  error text not null,
  created_at timestamptz not null default now()
);
