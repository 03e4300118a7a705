-- MCP gateway: upstream MCP servers agents reach through /v1/mcp/{id}. The
-- extra request headers (credentials, usually) are encrypted like provider
-- keys; only their names are kept in the clear, to show which are set.
create table mcp_servers (
  id text primary key,
  workspace_id text not null references workspaces (id) on delete cascade,
  display_name text not null,
  url text not null,
  agent_id text not null,
  result_origin text not null default 'tool_output',
  header_names jsonb not null default '[]'::jsonb,
  -- AES-256-GCM of the headers' JSON: 'v1:' || base64(iv || tag || ciphertext), bound to (workspace_id, id); null: none
  encrypted_headers text,
  created_at timestamptz(3) not null default now(),
  updated_at timestamptz(3) not null default now()
);
create index mcp_servers_workspace on mcp_servers (workspace_id, created_at desc, id desc);
