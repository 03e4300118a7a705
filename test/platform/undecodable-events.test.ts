/**
 * The real service's consumers and a message on `decisions` they cannot
 * decode (a required field missing): each group that reads the topic writes
 * it to `dead_letters` with the parse error as its reason, instead of
 * skipping it unseen, and goes on with the events after it.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { randomUUID } from "node:crypto"
import { EventLog } from "../../src/platform/EventLog.js"
import { Topics } from "../../src/platform/Topics.js"
import { queryDatabase } from "../support/Database.js"
import { eventually } from "../support/Eventually.js"
import { SERVER_OPTIONS, TestDatabaseUrl, testServerWithDatabase } from "../support/TestServer.js"

layer(testServerWithDatabase("database"), SERVER_OPTIONS)("undecodable events", (it) => {
  it.effect("every group reading the topic dead-letters it with the reason", () =>
    Effect.gen(function* () {
      const url = yield* TestDatabaseUrl
      const log = yield* EventLog
      const eventId = randomUUID()
      yield* log.publish([
        {
          eventId,
          topic: Topics.decisions,
          key: "ws_undecodable",
          value: JSON.stringify({ schema_version: 1, workspace_id: "ws_undecodable" })
        }
      ])
      const dead = yield* eventually(
        Effect.flatMap(
          queryDatabase<{ group_id: string; error: string }>(
            url,
            "select group_id, error from dead_letters where event_id = $1 order by group_id",
            [eventId]
          ),
          (rows) => (rows.length >= 3 ? Effect.succeed(rows) : Effect.fail(rows))
        ),
        "60 seconds"
      )
      expect(dead.map((row) => row.group_id)).toEqual(["analytics", "budget-actions", "run-counters"])
      for (const row of dead) expect(row.error).toMatch(/is missing/)
    })
  )
})
