/**
 * The order in which run rows are locked. Two writers lock several runs at
 * once: the run-event group commit (a batch's runs) and the run-counters
 * consumer (a batch of decisions' runs, by workspace then id). Taken in
 * different orders, a batch with runs of two workspaces could deadlock the
 * other: PostgreSQL then aborts one after a second, and every append of that
 * batch waited for it. Here another session takes two runs' locks in the
 * counters' order while an append batch waits for the first of them; the
 * batch must hold nothing the session then needs.
 */
import { expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect, Fiber, Layer } from "effect"
import pg from "pg"
import { Outbox } from "../../src/platform/Outbox.js"
import { RunsRepo } from "../../src/runs/Repo.js"
import { queryDatabase } from "../support/Database.js"
import { createRun } from "../support/Events.js"
import { until } from "../support/Eventually.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, TestDatabaseUrl, testServerWithDatabase } from "../support/TestServer.js"

/** A session of its own, with an open transaction, for the life of the scope. */
const session = (url: string) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const client = new pg.Client({ connectionString: url, application_name: "lock-order-test" })
      await client.connect()
      await client.query("begin")
      return client
    }),
    (client) => Effect.promise(() => client.query("rollback").finally(() => client.end()))
  )

const lockRun = (client: pg.Client, id: string) =>
  Effect.promise(() => client.query("select id from runs where id = $1 for update", [id]))

layer(testServerWithDatabase("database"), SERVER_OPTIONS)("run row locks", (it) => {
  it.scoped("an append batch locks its runs in the run counters' order (workspace, then id)", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const url = yield* TestDatabaseUrl
      const sql = yield* SqlClient.SqlClient
      const [first, second] = [yield* tenant(base), yield* tenant(base)].sort((a, b) =>
        a.workspaceId < b.workspaceId ? -1 : 1
      )
      // The run of the later workspace is created first: by id alone the order of the two runs is the other way.
      const later = yield* createRun(base, second!, { agent_id: "bot", kind: "job" })
      const earlier = yield* createRun(base, first!, { agent_id: "bot", kind: "job" })
      expect(later.id < earlier.id).toBe(true)

      const repo = yield* Effect.provide(RunsRepo, RunsRepo.Default.pipe(Layer.provide(Outbox.Default)))
      const counters = yield* session(url)
      // The counters' order: the first workspace's run, then the second's.
      yield* lockRun(counters, earlier.id)
      const batch = yield* sql
        .withTransaction(
          repo.lockAndBump(
            [
              { id: earlier.id, workspace_id: first!.workspaceId, environment_id: "", count: 1 },
              { id: later.id, workspace_id: second!.workspaceId, environment_id: "", count: 1 }
            ],
            ["completed", "failed", "canceled"]
          )
        )
        .pipe(Effect.fork)
      // The batch waits for the run the other session holds...
      yield* until(
        Effect.map(
          queryDatabase<{ n: string }>(
            url,
            `select count(*)::text as n from pg_stat_activity
              where datname = current_database() and wait_event_type = 'Lock' and query ilike '%last_sequence%'`
          ),
          (rows) => expect(Number(rows[0]!.n)).toBe(1)
        )
      )
      // ...holding none the session takes next: before, it held the second workspace's run (lower id), and one
      // of the two was aborted as a deadlock.
      yield* lockRun(counters, later.id)
      yield* Effect.promise(() => counters.query("commit"))
      const locked = yield* Fiber.join(batch)
      expect(locked.map((run) => [run.id, run.last_sequence]).sort()).toEqual(
        [
          [earlier.id, 1],
          [later.id, 1]
        ].sort()
      )
    })
  )
})
