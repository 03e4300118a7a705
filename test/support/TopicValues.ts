/** Values of the `decisions` topic as a producer writes them, for suites that publish to the event log directly. */
import { randomUUID } from "node:crypto"

/** A decided `permit`, version 1, of `workspaceId`; `extra` overrides or adds fields (e.g. a bad one). */
export const decisionValue = (workspaceId: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    schema_version: 1,
    trace_id: randomUUID(),
    workspace_id: workspaceId,
    agent_id: "agent_topic",
    environment_id: "env_topic",
    run_id: null,
    session_id: null,
    effect: "permit",
    status: "decided",
    domain: "orders",
    policy_ids: [],
    latency_ms: 4,
    decided_at: new Date().toISOString(),
    ...extra
  })
