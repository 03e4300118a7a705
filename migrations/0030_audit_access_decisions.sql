-- Approval grants and denials, and MCP tool pins (which tool definitions an admin accepted), are
-- decisions about access: audited like configuration (docs/audit.md). A pin's listing bookkeeping
-- (seen_at, touched by every tools/list) is left out, so only a changed definition, an acceptance,
-- a poisoning verdict or a removal records an event.
create trigger audit after insert or update or delete on approval_grants
  for each row execute function audit_row_change('approval_grant', 'intent_id', 'workspace_id', '');
create trigger audit after insert or update or delete on approval_denials
  for each row execute function audit_row_change('approval_denial', 'intent_id', 'workspace_id', '');
-- A pin is one tool of one server: its audit resource id names both.
alter table mcp_tool_pins add column pin_id text generated always as (server_id || '/' || tool) stored;
create trigger audit after insert or update or delete on mcp_tool_pins
  for each row execute function audit_row_change('mcp_tool_pin', 'pin_id', 'workspace_id', 'seen_at');
