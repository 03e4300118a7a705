-- MCP tool pinning (the "rug pull" defence): the definition (description,
-- schemas, annotations) each tool of a server had when the gateway first
-- listed it. A later listing with another definition leaves the tool out,
-- and its calls are refused, until an admin accepts the new definition.
create table mcp_tool_pins (
  workspace_id text not null references workspaces (id) on delete cascade,
  server_id text not null references mcp_servers (id) on delete cascade,
  tool text not null,
  -- sha256 of the canonical JSON of the accepted definition
  pinned_digest text not null,
  -- the definition of the latest listing: differs from pinned_digest while a change awaits acceptance
  seen_digest text not null,
  -- the latest listing's decision found instructions in its description (tool poisoning): left out, not callable
  poisoned boolean not null default false,
  pinned_at timestamptz(3) not null default now(),
  seen_at timestamptz(3) not null default now(),
  primary key (workspace_id, server_id, tool)
);
