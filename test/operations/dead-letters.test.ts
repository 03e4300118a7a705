/**
 * `npm run dead-letters -- list|replay`, run as a separate process against the
 * suite's database while the platform (relay and two consumer groups) runs:
 * a group that cannot decode two events dead-letters them with the reason;
 * once it can (a fix deployed), `replay` delivers them to that group alone,
 * once, and a second `replay` changes nothing. The other group, which applied
 * every event the first time, counts none of them twice.
 */
import { describe, expect, it } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer } from "effect"
import { execFile } from "node:child_process"
import { fileURLToPath } from "node:url"
import { consumeOnce, UndecodableEvent } from "../../src/platform/Consumer.js"
import { Outbox } from "../../src/platform/Outbox.js"
import { PlatformLive } from "../../src/platform/Platform.js"
import { Topics } from "../../src/platform/Topics.js"
import { queryDatabase } from "../support/Database.js"
import { eventually } from "../support/Eventually.js"
import { configLayer, freshDatabase, settingsFor, uniqueName } from "../support/TestPlatform.js"

const root = fileURLToPath(new URL("../../", import.meta.url))

/** Runs the script to completion; answers its stdout lines parsed as JSON. */
const deadLetters = (databaseUrl: string, ...args: ReadonlyArray<string>) =>
  Effect.promise(
    () =>
      new Promise<Array<Record<string, unknown>>>((resolve, reject) =>
        execFile(
          process.execPath,
          ["--import", "tsx", "scripts/dead-letters.ts", ...args],
          { cwd: root, env: { PATH: process.env["PATH"] ?? "", DATABASE_URL: databaseUrl, LOG_LEVEL: "warn" } },
          (error, stdout, stderr) =>
            error === null
              ? resolve(
                  stdout
                    .split("\n")
                    .filter((line) => line.startsWith("{"))
                    .map((line) => JSON.parse(line) as Record<string, unknown>)
                )
              : reject(new Error(`${error.message}\n${stderr}`))
        )
      )
  )

describe("dead letters CLI", () => {
  it.live(
    "list shows each undecodable event with its reason; replay applies it once, to its group alone",
    () =>
      Effect.gen(function* () {
        const url = yield* freshDatabase
        const context = yield* Layer.build(PlatformLive.pipe(Layer.provide(configLayer(settingsFor("database", url)))))
        const sql = Context.get(context, SqlClient.SqlClient)
        const outbox = Context.get(context, Outbox)
        const table = uniqueName("applied")
        yield* sql.unsafe(`create table ${table} (grp text not null, event_id uuid not null, version int not null)`)
        const counts = Effect.map(
          queryDatabase<{ grp: string; n: string; distinct: string }>(
            url,
            `select grp, count(*)::text as n, count(distinct event_id)::text as distinct from ${table} group by grp`
          ),
          (rows) => Object.fromEntries(rows.map((row) => [row.grp, [Number(row.n), Number(row.distinct)]]))
        )
        const until = (expected: Record<string, [number, number]>) =>
          eventually(
            Effect.flatMap(counts, (seen) =>
              JSON.stringify(seen) === JSON.stringify(expected) ? Effect.void : Effect.fail(seen)
            ),
            "60 seconds"
          )

        // The strict group understands version 1 only, until a fix is deployed.
        let understandsVersion2 = false
        const strict = uniqueName("strict")
        const record = (group: string) => (delivery: { eventId: string; value: string }) => {
          const version = (JSON.parse(delivery.value) as { schema_version: number }).schema_version
          return sql.unsafe(`insert into ${table} (grp, event_id, version) values ($1, $2, $3)`, [
            group,
            delivery.eventId,
            version
          ])
        }
        yield* consumeOnce({
          group: strict,
          topics: [Topics.runEvents],
          handle: (delivery): Effect.Effect<unknown, unknown> =>
            (JSON.parse(delivery.value) as { schema_version: number }).schema_version === 2 && !understandsVersion2
              ? Effect.fail(new UndecodableEvent({ eventId: delivery.eventId, reason: "unknown schema_version 2" }))
              : record("strict")(delivery)
        }).pipe(Effect.provide(context), Effect.forkScoped)
        yield* consumeOnce({
          group: uniqueName("lenient"),
          topics: [Topics.runEvents],
          handle: record("lenient")
        }).pipe(Effect.provide(context), Effect.forkScoped)

        yield* sql.withTransaction(
          outbox.enqueue(
            Array.from({ length: 20 }, (_, i) => ({
              topic: Topics.runEvents,
              key: `key-${i % 3}`,
              value: { schema_version: i === 4 || i === 11 ? 2 : 1, i }
            }))
          )
        )
        yield* until({ lenient: [20, 20], strict: [18, 18] })

        const open = yield* deadLetters(url, "list")
        expect(open.map((row) => [row["group"], row["topic"], row["reason"], row["replayed_at"]])).toEqual([
          [strict, Topics.runEvents, "unknown schema_version 2", null],
          [strict, Topics.runEvents, "unknown schema_version 2", null]
        ])

        understandsVersion2 = true
        expect(yield* deadLetters(url, "replay")).toEqual([{ replayed: 2 }])
        yield* until({ lenient: [20, 20], strict: [20, 20] })
        expect(yield* deadLetters(url, "replay")).toEqual([{ replayed: 0 }])
        const all = yield* deadLetters(url, "list", "--all")
        expect(all.map((row) => typeof row["replayed_at"])).toEqual(["string", "string"])

        // Even a replay forced through the outbox again is deduped by the strict group and ignored by the other.
        yield* sql`update dead_letters set replayed_at = null`
        expect(yield* deadLetters(url, "replay", "--group", strict)).toEqual([{ replayed: 2 }])
        yield* eventually(
          Effect.flatMap(outbox.backlog, (n) => (n === 0 ? Effect.void : Effect.fail(n))),
          "30 seconds"
        )
        yield* Effect.sleep("1 second")
        expect(yield* counts).toEqual({ lenient: [20, 20], strict: [20, 20] })
      }).pipe(Effect.scoped),
    // Five runs of the script, each a Node process of its own.
    300_000
  )
})
