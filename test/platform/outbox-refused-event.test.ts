/**
 * Outbox rows the relay cannot publish, each between two good ones:
 * - a row larger than the Kafka broker accepts (its default message.max.bytes
 *   is about 1 MB). The relay used to retry its batch forever, so no event of
 *   any topic was published after it;
 * - a row the relay cannot read (headers that are not a string map, as a row
 *   written by another version during a rolling upgrade might be). The relay
 *   used to die on it for good (a defect is not retried) until a restart.
 * Now each is dead-lettered under the group `outbox-relay` and the events
 * after it reach the consumers (here `analytics`, which dead-letters the small
 * test values as undecodable: proof that it read them).
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { randomUUID } from "node:crypto"
import { RELAY_GROUP } from "../../src/platform/Outbox.js"
import { Topics } from "../../src/platform/Topics.js"
import { queryDatabase } from "../support/Database.js"
import { eventually } from "../support/Eventually.js"
import { SERVER_OPTIONS, TestDatabaseUrl, testServerWithDatabase } from "../support/TestServer.js"

/** Outboxes a good row, the bad one (`value`, `headers`) and a good row; answers the bad row's dead letter. */
const relayAround = (value: string, headers: string) =>
  Effect.gen(function* () {
    const url = yield* TestDatabaseUrl
    const [before, bad, after] = [randomUUID(), randomUUID(), randomUUID()]
    yield* queryDatabase(
      url,
      `insert into outbox (event_id, topic, key, value, headers) values
         ($1, $4, 'k', '{}', '{}'), ($2, $4, 'k', $5, $6::jsonb), ($3, $4, 'k', '{}', '{}')`,
      [before, bad, after, Topics.runEvents, value, headers]
    )
    const seen = yield* eventually(
      Effect.flatMap(
        queryDatabase<{ group_id: string; event_id: string; error: string }>(
          url,
          "select group_id, event_id::text as event_id, error from dead_letters where event_id in ($1, $2, $3)",
          [before, bad, after]
        ),
        (rows) => (rows.length >= 3 ? Effect.succeed(rows) : Effect.fail(rows))
      ),
      "60 seconds"
    )
    const byEvent = new Map(seen.map((row) => [row.event_id, row]))
    expect(byEvent.get(bad)?.group_id).toBe(RELAY_GROUP)
    expect(byEvent.get(before)?.group_id).toBe("analytics")
    expect(byEvent.get(after)?.group_id).toBe("analytics")
    const left = yield* queryDatabase<{ n: string }>(url, "select count(*)::text as n from outbox")
    expect(left[0]!.n).toBe("0")
    return byEvent.get(bad)!
  })

layer(testServerWithDatabase("kafka"), SERVER_OPTIONS)("outbox rows the relay cannot publish", (it) => {
  it.effect(
    "a row the broker refuses is dead-lettered; the events after it are published",
    () =>
      Effect.gen(function* () {
        const huge = JSON.stringify({ schema_version: 1, pad: "x".repeat(2_000_000) })
        const dead = yield* relayAround(huge, "{}")
        expect(dead.error).toMatch(/^not published: .*larger than the max message size/)
      }),
    120_000
  )

  it.effect(
    "a row the relay cannot read is dead-lettered; the events after it are published",
    () =>
      Effect.gen(function* () {
        const dead = yield* relayAround("{}", '{"attempt": 3}')
        expect(dead.error).toMatch(/^not published: headers: /)
      }),
    120_000
  )
})
