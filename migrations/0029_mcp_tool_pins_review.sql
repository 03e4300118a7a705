-- MCP tool pins, after review:
-- - a tool's poisoning is per environment (each environment screens with its own checker modes): the
--   environments whose latest listing left it out as poisoned;
-- - the definition of the latest listing is kept, so an admin reads what they accept;
-- - deleting a server finds its pins by index.
alter table mcp_tool_pins add column poisoned_in text[] not null default '{}';
-- (a tool marked poisoned before is screened again at its next listing)
alter table mcp_tool_pins drop column poisoned;
alter table mcp_tool_pins add column seen_definition jsonb not null default '{}'::jsonb;
create index mcp_tool_pins_server on mcp_tool_pins (server_id);
