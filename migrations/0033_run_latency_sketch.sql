-- A run's decision latencies as a latency sketch (src/analytics/Sketch.ts), kept by the run-counters consumer:
-- each batch merges its decisions into it and reads p95_latency_ms from it, where it used to recompute the
-- percentile over all of the run's traces (a long run's every batch cost more). Null until the consumer first
-- counts the run after this migration (a run counted before is seeded from its traces then, once).
alter table runs add column latency_sketch bigint[];
