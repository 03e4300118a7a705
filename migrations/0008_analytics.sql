-- Streaming analytics: consumer positions per partition, time-bucketed
-- aggregates and saved dashboard views.

-- Next offset to apply of each (group, topic, partition), written in the same
-- transaction as the effects of the events before it (src/platform/Consumer.ts).
-- `consumer_positions` (0001) is the embedded log's own cursor per topic; this
-- one is the consumers', so a restart or a rebalance skips what is applied.
create table consumer_partition_positions (
  group_id text not null,
  topic text not null,
  partition integer not null,
  next_offset bigint not null,
  updated_at timestamptz not null default now(),
  primary key (group_id, topic, partition)
);

-- Element-wise sum of two latency sketches (fixed log-scale histogram bins):
-- sketches merge by adding their bins.
create function analytics_sketch_merge(a bigint[], b bigint[]) returns bigint[]
language sql immutable as $$
  select case
    when a is null then b
    when b is null then a
    else array(
      select coalesce(a[i], 0) + coalesce(b[i], 0)
      from generate_series(1, greatest(cardinality(a), cardinality(b))) as i
      order by i)
  end
$$;

-- One row per workspace, granularity (minute, hour, day), bucket start,
-- stored series and dimension values (a JSON object of strings). `value` is
-- a sum; `sketch` (decision latency) a histogram that merges by addition.
create table analytics_buckets (
  workspace_id text not null,
  granularity text not null check (granularity in ('minute', 'hour', 'day')),
  bucket_start timestamptz not null,
  series text not null,
  dims jsonb not null default '{}'::jsonb,
  value bigint not null default 0,
  sketch bigint[],
  updated_at timestamptz not null default now(),
  primary key (workspace_id, series, granularity, bucket_start, dims)
);

create table analytics_views (
  id text primary key,
  workspace_id text not null references workspaces (id) on delete cascade,
  name text not null,
  is_default boolean not null default false,
  config jsonb not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index analytics_views_workspace on analytics_views (workspace_id, created_at desc, id desc);
