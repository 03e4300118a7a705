/**
 * An outbox row the relay cannot read (headers that are not a string map, as
 * a row written by another version of the service during a rolling upgrade
 * might be), between two good ones. The relay used to die on it for good (a
 * defect is not retried), so no event of any topic was published again until
 * a restart. Now the row is dead-lettered under the group `outbox-relay` and
 * the events after it reach the consumers (here `analytics`, which
 * dead-letters the small test values as undecodable: proof that it read them).
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { randomUUID } from "node:crypto"
import { RELAY_GROUP } from "../../src/platform/Outbox.js"
import { Topics } from "../../src/platform/Topics.js"
import { queryDatabase } from "../support/Database.js"
import { eventually } from "../support/Eventually.js"
import { SERVER_OPTIONS, TestDatabaseUrl, testServerWithDatabase } from "../support/TestServer.js"

layer(testServerWithDatabase("kafka"), SERVER_OPTIONS)("outbox row the relay cannot read", (it) => {
  it.effect(
    "is dead-lettered; the events after it are published",
    () =>
      Effect.gen(function* () {
        const url = yield* TestDatabaseUrl
        const before = randomUUID()
        const unreadable = randomUUID()
        const after = randomUUID()
        yield* queryDatabase(
          url,
          `insert into outbox (event_id, topic, key, value, headers) values
             ($1, $4, 'k', '{}', '{}'), ($2, $4, 'k', '{}', '{"attempt": 3}'), ($3, $4, 'k', '{}', '{}')`,
          [before, unreadable, after, Topics.runEvents]
        )
        const seen = yield* eventually(
          Effect.flatMap(
            queryDatabase<{ group_id: string; event_id: string; error: string }>(
              url,
              "select group_id, event_id::text as event_id, error from dead_letters where event_id in ($1, $2, $3)",
              [before, unreadable, after]
            ),
            (rows) => (rows.length >= 3 ? Effect.succeed(rows) : Effect.fail(rows))
          ),
          "60 seconds"
        )
        const byEvent = new Map(seen.map((row) => [row.event_id, row]))
        expect(byEvent.get(unreadable)?.group_id).toBe(RELAY_GROUP)
        expect(byEvent.get(unreadable)?.error).toMatch(/^not published: .*headers/)
        expect(byEvent.get(before)?.group_id).toBe("analytics")
        expect(byEvent.get(after)?.group_id).toBe("analytics")
        const left = yield* queryDatabase<{ n: string }>(url, "select count(*)::text as n from outbox")
        expect(left[0]!.n).toBe("0")
      }),
    120_000
  )
})
