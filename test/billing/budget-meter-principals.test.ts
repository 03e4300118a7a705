/**
 * The budget meters keep one total per window for the whole workspace
 * (principal '') and one per principal. A metered event whose principal is
 * the empty string (a decision's `agent_id`, an llm-usage `principal_id`:
 * both plain strings in their topic's Schema) named the workspace's row
 * twice in one upsert, which PostgreSQL refuses (21000); the consumer took
 * that for an outage and retried it forever, so its partition's budget
 * meters stopped. It now counts once, toward the workspace's total.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { randomUUID } from "node:crypto"
import { EventLog } from "../../src/platform/EventLog.js"
import { Topics } from "../../src/platform/Topics.js"
import { queryDatabase } from "../support/Database.js"
import { eventually } from "../support/Eventually.js"
import { baseUrl, SERVER_OPTIONS, TestDatabaseUrl, testServerWithDatabase } from "../support/TestServer.js"
import { decisionValue } from "../support/TopicValues.js"
import { tenant } from "../support/Tenants.js"

const decision = (workspaceId: string, agentId: string) => ({
  eventId: randomUUID(),
  topic: Topics.decisions,
  key: workspaceId,
  value: decisionValue(workspaceId, { agent_id: agentId })
})

layer(testServerWithDatabase("database"), SERVER_OPTIONS)("budget meters and an empty principal", (it) => {
  it.effect(
    "a decision with an empty agent_id counts once toward the workspace and the meter goes on",
    () =>
      Effect.gen(function* () {
        const url = yield* TestDatabaseUrl
        const log = yield* EventLog
        const ws = (yield* tenant(yield* baseUrl)).workspaceId
        yield* log.publish([decision(ws, "")])
        yield* log.publish([decision(ws, "agent_meter")])
        const totals = yield* eventually(
          Effect.flatMap(
            queryDatabase<{ principal_id: string; amount: string }>(
              url,
              `select principal_id, amount::text as amount from budget_meter_totals
               where workspace_id = $1 and meter = 'actions' and time_window = 'day' order by principal_id`,
              [ws]
            ),
            (rows) =>
              rows.find((row) => row.principal_id === "")?.amount === "2" ? Effect.succeed(rows) : Effect.fail(rows)
          ),
          "60 seconds"
        )
        expect(totals).toEqual([
          { principal_id: "", amount: "2" },
          { principal_id: "agent_meter", amount: "1" }
        ])
        const dead = yield* queryDatabase<{ n: string }>(
          url,
          "select count(*)::text as n from dead_letters where group_id = 'budget-actions'"
        )
        expect(dead[0]!.n).toBe("0")
      }),
    120_000
  )
})
