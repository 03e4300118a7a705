-- Provenance without labels (docs/authorization.md): keyed HMACs of the salient values (e-mail
-- addresses, IBANs, long numbers, URLs, ...) that entered a run or session, with the origin they
-- came from. Never the values themselves. Expired with the workspace's retention_days.
create table provenance_fingerprints (
  workspace_id text not null references workspaces (id) on delete cascade,
  -- 'run:<run_id>' or 'session:<session_id>'
  scope text not null,
  -- base64url HMAC-SHA256 of the normalised value under the workspace's key
  fingerprint text not null,
  origin text not null,
  first_seen_at timestamptz not null default now(),
  primary key (workspace_id, scope, fingerprint, origin)
);
create index provenance_fingerprints_age on provenance_fingerprints (workspace_id, first_seen_at);
