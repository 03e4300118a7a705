/** Values of the `decisions` topic as a producer writes them, for suites that publish to the event log directly. */
import { Effect } from "effect"
import { randomUUID } from "node:crypto"
import { queryDatabase } from "./Database.js"
import { eventually } from "./Eventually.js"

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

/** The decisions of `domain` analytics counted in the workspace (day buckets), once they reach `atLeast`. */
export const decisionsCounted = (url: string, workspaceId: string, domain: string, atLeast: number) =>
  eventually(
    Effect.flatMap(
      queryDatabase<{ n: string | null }>(
        url,
        `select sum(value)::text as n from analytics_buckets
         where workspace_id = $1 and series = 'decisions' and granularity = 'day' and dims->>'domain' = $2`,
        [workspaceId, domain]
      ),
      ([row]) => (Number(row?.n ?? 0) >= atLeast ? Effect.succeed(Number(row?.n)) : Effect.fail(row?.n))
    ),
    "60 seconds"
  )
