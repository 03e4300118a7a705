-- Idempotency keys (API-CONVENTIONS "idempotency"): a POST /v1/events or run-event append sent with an
-- Idempotency-Key header claims the key in its workspace; a repeat within 24 h answers the stored response
-- and writes nothing. The primary key is what makes concurrent duplicates take turns: only one claims it.
create table idempotency_keys (
  workspace_id text not null references workspaces (id) on delete cascade,
  idempotency_key text not null,
  -- sha256 of the endpoint, path and body: the same key with another request is refused
  request_digest text not null,
  -- the success as the contract encodes it; null while the first request is in flight
  response jsonb,
  created_at timestamptz(3) not null default now(),
  primary key (workspace_id, idempotency_key)
);
create index idempotency_keys_created on idempotency_keys (created_at);
