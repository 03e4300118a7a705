-- Fair job queues (docs/redteam.md#queue-fairness): a claim counts each waiting workspace's running jobs
-- and finds when its last job started; dispatch counts its queued and running jobs against a cap.
create index redteam_jobs_workspace_active on redteam_jobs (workspace_id, status) where status in ('queued', 'running');
create index redteam_jobs_workspace_started on redteam_jobs (workspace_id, started_at desc) where started_at is not null;
create index impact_jobs_workspace_active on impact_jobs (workspace_id, status) where status in ('queued', 'running');
create index impact_jobs_workspace_started on impact_jobs (workspace_id, started_at desc) where started_at is not null;
