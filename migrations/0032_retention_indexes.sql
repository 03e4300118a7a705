-- The retention task (src/operations/Retention.ts) deletes each workspace's rows older than its
-- retention_days, a batch at a time, for every workspace on every sweep. Without an index leading with
-- (workspace, date), each batch read the whole table (receipts and run_events have no workspace index
-- at all) or all of the workspace's rows: sweeps grew with the tables and kept the database busy.
create index if not exists receipts_workspace_created on receipts (workspace_id, created_at);
create index if not exists run_events_workspace_created on run_events (workspace_id, created_at);
create index if not exists review_events_workspace_created on review_events (workspace_id, created_at);
create index if not exists redteam_attacks_workspace_created on redteam_attacks (workspace_id, created_at);
-- Deleting a trace cascades to its review events (`where trace_id = $1`, once per trace): the index above
-- and review_events_trace lead with the workspace, so each deleted trace scanned the whole table.
create index if not exists review_events_trace_only on review_events (trace_id);
