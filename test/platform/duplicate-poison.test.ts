/**
 * An event that cannot be decoded, delivered twice in one batch under the
 * same event id (the outbox relay published it again after a crash, or
 * another producer retried it): each group writes one dead letter and goes
 * on. Before, both copies went into one `insert ... on conflict do update`,
 * which PostgreSQL refuses (21000, a row affected twice); that is no
 * content error the consumer recognises, so the batch was retried forever
 * and the partition held: nothing behind it was applied.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { randomUUID } from "node:crypto"
import { EventLog } from "../../src/platform/EventLog.js"
import { Topics } from "../../src/platform/Topics.js"
import { queryDatabase } from "../support/Database.js"
import { eventually } from "../support/Eventually.js"
import { baseUrl, SERVER_OPTIONS, TestDatabaseUrl, testServerWithDatabase } from "../support/TestServer.js"
import { decisionsCounted, decisionValue } from "../support/TopicValues.js"
import { tenant } from "../support/Tenants.js"

layer(testServerWithDatabase("database"), SERVER_OPTIONS)("an undecodable event twice in one batch", (it) => {
  it.effect(
    "each group dead-letters it once and applies what follows",
    () =>
      Effect.gen(function* () {
        const url = yield* TestDatabaseUrl
        const log = yield* EventLog
        const ws = (yield* tenant(yield* baseUrl)).workspaceId
        const poison = { eventId: randomUUID(), topic: Topics.decisions, key: ws, value: '{"schema_version": 2}' }
        // One append: one poll, one batch per group.
        yield* log.publish([
          poison,
          poison,
          {
            eventId: randomUUID(),
            topic: Topics.decisions,
            key: ws,
            value: decisionValue(ws, { domain: "duplicates" })
          }
        ])

        const counted = yield* decisionsCounted(url, ws, "duplicates", 1)
        expect(counted).toBe(1)
        const dead = yield* eventually(
          Effect.flatMap(
            queryDatabase<{ group_id: string }>(
              url,
              "select group_id from dead_letters where event_id = $1 order by group_id",
              [poison.eventId]
            ),
            (rows) => (rows.length >= 3 ? Effect.succeed(rows) : Effect.fail(rows))
          ),
          "60 seconds"
        )
        expect(dead.map((row) => row.group_id)).toEqual(["analytics", "budget-actions", "run-counters"])
      }),
    120_000
  )
})
