-- Audit log (docs/audit.md): every change to configuration or access rows
-- appends an event, hash-chained per workspace, in the transaction of the
-- change itself. Row triggers do it, so no write path can forget to audit;
-- the application only names the actor and request id of the transaction
-- (transaction-local settings guardrail.audit_actor / guardrail.audit_request).

create table audit_events (
  workspace_id text not null,
  -- 1, 2, 3... per workspace: the chain's order
  seq bigint not null,
  id text not null unique,
  actor_kind text not null check (actor_kind in ('user', 'key', 'system')),
  actor_id text not null,
  action text not null,
  resource_type text not null,
  resource_id text not null,
  before_digest text,
  after_digest text,
  request_id text,
  created_at timestamptz(3) not null,
  prev_hash text,
  hash text not null,
  primary key (workspace_id, seq)
);
create index audit_events_resource on audit_events (workspace_id, resource_type, resource_id, seq desc);

-- One row per workspace: the chain's head, locked (for update) by every append, so
-- concurrent changes append one after another and the chain never forks. The
-- anchor is where verification starts after pruning: the hash of the last pruned
-- row, signed by the service (anchor_signature), and the seq it ended at.
create table audit_heads (
  workspace_id text primary key,
  seq bigint not null,
  hash text,
  anchor_seq bigint not null default 0,
  anchor_hash text,
  anchor_signature text,
  anchored_at timestamptz(3)
);

-- A field of the hashed text: its UTF-8 length, a colon and the value ('~' for null), so no
-- choice of values can make two different rows hash the same text. src/audit/Chain.ts mirrors it.
create function audit_field(value text) returns text language sql immutable as $$
  select case when value is null then '~' else octet_length(value)::text || ':' || value end
$$;

-- A UUIDv7 (millisecond time, then random), like the event ids the application gives outbox rows:
-- a v4 with the time written over its first 48 bits and the version nibble set to 7.
create function audit_uuid_v7() returns uuid language sql volatile as $$
  select encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
    placing substring(int8send(floor(extract(epoch from clock_timestamp()) * 1000)::bigint) from 3)
    from 1 for 6), 52, 1), 53, 1), 'hex')::uuid
$$;

-- TG_ARGV: resource type, key column, workspace column, comma-separated columns left out of
-- the digests (secrets, ciphertexts, bookkeeping a read touches).
create function audit_row_change() returns trigger language plpgsql as $$
declare
  stripped text[] := string_to_array(coalesce(TG_ARGV[3], ''), ',');
  before_row jsonb;
  after_row jsonb;
  subject jsonb;
  ws text;
  rid text;
  before_digest text;
  after_digest text;
  actor text := nullif(current_setting('guardrail.audit_actor', true), '');
  request text := nullif(current_setting('guardrail.audit_request', true), '');
  actor_kind text := 'system';
  actor_id text := 'system';
  verb text;
  head_seq bigint;
  head_hash text;
  new_id text;
  at timestamptz(3);
  row_hash text;
begin
  if TG_OP <> 'INSERT' then before_row := to_jsonb(OLD) - stripped; end if;
  if TG_OP <> 'DELETE' then after_row := to_jsonb(NEW) - stripped; end if;
  -- An update of left-out columns only (e.g. api_keys.last_used_at) changes no configuration.
  if before_row is not distinct from after_row then return null; end if;
  subject := case when TG_OP = 'DELETE' then to_jsonb(OLD) else to_jsonb(NEW) end;
  ws := subject ->> TG_ARGV[2];
  rid := subject ->> TG_ARGV[1];
  if before_row is not null then
    before_digest := encode(sha256(convert_to(before_row::text, 'UTF8')), 'hex');
  end if;
  if after_row is not null then
    after_digest := encode(sha256(convert_to(after_row::text, 'UTF8')), 'hex');
  end if;
  if actor is not null and position(':' in actor) > 0 then
    actor_kind := split_part(actor, ':', 1);
    actor_id := substr(actor, position(':' in actor) + 1);
  end if;
  verb := case TG_OP when 'INSERT' then 'create' when 'UPDATE' then 'update' else 'delete' end;

  insert into audit_heads (workspace_id, seq) values (ws, 0) on conflict (workspace_id) do nothing;
  select h.seq, h.hash into head_seq, head_hash from audit_heads h where h.workspace_id = ws for update;
  -- Taken once the head is ours, so created_at never goes backwards along the chain (pruning relies on it).
  at := date_trunc('milliseconds', clock_timestamp());

  new_id := 'aud_' || lpad(to_hex((extract(epoch from at) * 1000)::bigint), 12, '0')
    || replace(gen_random_uuid()::text, '-', '');
  row_hash := encode(sha256(convert_to(
    audit_field(head_hash) || '|' || audit_field(new_id) || '|' || audit_field(ws) || '|'
    || audit_field((head_seq + 1)::text) || '|' || audit_field(actor_kind) || '|' || audit_field(actor_id) || '|'
    || audit_field(TG_ARGV[0] || '.' || verb) || '|' || audit_field(TG_ARGV[0]) || '|' || audit_field(rid) || '|'
    || audit_field(before_digest) || '|' || audit_field(after_digest) || '|' || audit_field(request) || '|'
    || audit_field(((extract(epoch from at) * 1000)::bigint)::text),
    'UTF8')), 'hex');

  insert into audit_events (workspace_id, seq, id, actor_kind, actor_id, action, resource_type, resource_id,
    before_digest, after_digest, request_id, created_at, prev_hash, hash)
  values (ws, head_seq + 1, new_id, actor_kind, actor_id, TG_ARGV[0] || '.' || verb, TG_ARGV[0], rid,
    before_digest, after_digest, request, at, head_hash, row_hash);
  update audit_heads set seq = head_seq + 1, hash = row_hash where workspace_id = ws;

  -- The `audit` topic, through the outbox: published only if this transaction commits.
  insert into outbox (event_id, topic, key, value)
  values (audit_uuid_v7(), 'audit', ws, jsonb_build_object(
    'schema_version', 1, 'id', new_id, 'workspace_id', ws, 'seq', head_seq + 1,
    'actor', jsonb_build_object('kind', actor_kind, 'id', actor_id),
    'action', TG_ARGV[0] || '.' || verb, 'resource_type', TG_ARGV[0], 'resource_id', rid,
    'before_digest', before_digest, 'after_digest', after_digest, 'request_id', request,
    'created_at', to_char(at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'prev_hash', head_hash, 'hash', row_hash)::text);
  return null;
end
$$;

create trigger audit after insert or update or delete on policies
  for each row execute function audit_row_change('policy', 'id', 'workspace_id', '');
create trigger audit after insert or update or delete on agents
  for each row execute function audit_row_change('agent', 'agent_id', 'workspace_id', '');
create trigger audit after insert or update or delete on label_policies
  for each row execute function audit_row_change('label_policy', 'origin', 'workspace_id', '');
create trigger audit after insert or update or delete on tool_metadata
  for each row execute function audit_row_change('tool_metadata', 'tool', 'workspace_id', '');
-- The file's bytes stay out of the digest (size); byte_size and file_name are in it.
create trigger audit after insert or update or delete on knowledge_sources
  for each row execute function audit_row_change('knowledge_source', 'id', 'workspace_id', 'data');
create trigger audit after insert or update or delete on workspace_settings
  for each row execute function audit_row_change('settings', 'workspace_id', 'workspace_id', '');
create trigger audit after insert or update or delete on environments
  for each row execute function audit_row_change('environment', 'id', 'workspace_id', '');
create trigger audit after insert or update or delete on api_keys
  for each row execute function audit_row_change('api_key', 'id', 'workspace_id', 'key_hash,last_used_at');
create trigger audit after insert or update or delete on workspace_members
  for each row execute function audit_row_change('member', 'user_id', 'workspace_id', '');
create trigger audit after insert or update or delete on team_invites
  for each row execute function audit_row_change('invite', 'id', 'workspace_id', '');
-- The workspace row holds the feature flags.
create trigger audit after insert or update or delete on workspaces
  for each row execute function audit_row_change('workspace', 'id', 'id', '');
create trigger audit after insert or update or delete on provider_connections
  for each row execute function audit_row_change('provider_connection', 'id', 'workspace_id', 'encrypted_api_key');
create trigger audit after insert or update or delete on gateway_routes
  for each row execute function audit_row_change('route', 'id', 'workspace_id', '');
create trigger audit after insert or update or delete on llm_prices
  for each row execute function audit_row_change('llm_price', 'model', 'workspace_id', '');
create trigger audit after insert or update or delete on budget_alert_configs
  for each row execute function audit_row_change('budget_alert', 'id', 'workspace_id', 'secret_salt');
create trigger audit after insert or update or delete on mcp_servers
  for each row execute function audit_row_change('mcp_server', 'id', 'workspace_id', 'encrypted_headers');
