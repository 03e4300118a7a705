/**
 * The Overview view every new workspace starts with (inserted when the
 * workspace is provisioned, src/identity/Workspaces.ts), so the dashboard's
 * first visit shows something real. "LLM spend against budget" charts the
 * spend; the page draws the cap from the workspace's `config.llm_budget`.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { prefixedId } from "../platform/Ids.js"
import type { ViewConfigInput } from "./Views.js"

export const DEFAULT_VIEW_NAME = "Overview"

export const DEFAULT_VIEW_CONFIG: ViewConfigInput = {
  filters: [],
  widgets: [
    {
      id: "decisions-by-effect",
      title: "Decisions by effect",
      metric: "trace_count",
      chart_type: "bar",
      group_by: "effect",
      layout: { x: 0, y: 0, w: 6, h: 2 }
    },
    {
      id: "block-rate",
      title: "Block rate",
      metric: "block_rate",
      chart_type: "line",
      layout: { x: 6, y: 0, w: 6, h: 2 }
    },
    {
      id: "p95-latency",
      title: "p95 decision latency (ms)",
      metric: "p95_latency_ms",
      chart_type: "line",
      layout: { x: 0, y: 2, w: 6, h: 2 }
    },
    {
      id: "top-policies",
      title: "Top policies by findings",
      metric: "trace_count",
      chart_type: "table",
      group_by: "policy_id",
      layout: { x: 6, y: 2, w: 6, h: 2 }
    },
    {
      id: "llm-spend",
      title: "LLM spend against budget",
      metric: "llm_cost_minor",
      chart_type: "line",
      layout: { x: 0, y: 4, w: 12, h: 2 }
    }
  ]
}

/** Inserts the Overview view (the default) of a new workspace; call inside the provisioning transaction. */
export const insertDefaultView = (workspaceId: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) =>
      sql`insert into analytics_views (id, workspace_id, name, is_default, config)
          values (${prefixedId("view")}, ${workspaceId}, ${DEFAULT_VIEW_NAME}, true, ${JSON.stringify(DEFAULT_VIEW_CONFIG)})`
  )
