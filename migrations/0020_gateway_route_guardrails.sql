-- Per-route guardrail modes of the LLM gateway (docs/gateway.md "Guardrails"): what the gateway decides
-- for the request (input), the reply (output) and proposed tool calls (tool_calls).
alter table gateway_routes
  add column guardrail_input text not null default 'enforce'
    check (guardrail_input in ('off', 'observe', 'enforce')),
  add column guardrail_output text not null default 'enforce'
    check (guardrail_output in ('off', 'observe', 'enforce')),
  add column guardrail_tool_calls text not null default 'enforce'
    check (guardrail_tool_calls in ('off', 'observe', 'enforce'));
