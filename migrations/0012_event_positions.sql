-- Event plumbing hardening (no acknowledged event is ever lost):
-- consumer positions keyed by the log they belong to, dead letters that can
-- be replayed, and the indexes the retention task prunes by.

-- A stable id of this database's event log, generated once: positions read
-- from the database log are stored under it (Kafka's are under the cluster id).
create table event_log_identity (
  singleton boolean primary key default true check (singleton),
  id uuid not null default gen_random_uuid()
);
insert into event_log_identity default values;

-- A position belongs to one log instance: its kind (kafka | database), its id
-- (Kafka cluster id, or event_log_identity.id) and the physical topic
-- (KAFKA_TOPIC_PREFIX + topic). Rows from before this migration do not say
-- which log they came from, so they are dropped: a consumer then skips
-- nothing, and its event-id dedupe (processed_events) keeps re-reads from
-- counting twice.
delete from consumer_partition_positions;
alter table consumer_partition_positions
  add column log_kind text not null,
  add column log_id text not null,
  add column physical_topic text not null,
  drop constraint consumer_partition_positions_pkey,
  add primary key (group_id, log_kind, log_id, physical_topic, partition);

-- Dead letters: one per (group, event), with where it was read and why, and
-- whether an operator replayed it (npm run dead-letters -- replay).
delete from dead_letters d using dead_letters older
  where d.group_id = older.group_id and d.event_id = older.event_id and d.id > older.id;
alter table dead_letters
  add column headers jsonb not null default '{}'::jsonb,
  add column "partition" integer,
  add column "offset" text,
  add column replayed_at timestamptz;
create unique index dead_letters_group_event on dead_letters (group_id, event_id);

-- The retention task deletes old dedupe records and old database-log rows.
create index processed_events_processed_at on processed_events (processed_at);
create index event_log_created_at on event_log (created_at);
