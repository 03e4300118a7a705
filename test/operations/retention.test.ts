/**
 * retention_days, driven by effect's TestClock: the retention loop sweeps at
 * start (nothing is old yet), and once the clock has moved past a
 * workspace's retention it deletes that workspace's traces, receipts, run
 * events and review events, in bounded batches, while runs and their
 * counters (aggregates) stay, and a workspace with a longer retention keeps
 * everything. Each batch reads an index, not the table.
 */
import { expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect, Fiber, Queue, TestClock, TestContext } from "effect"
import { retentionLoop, retentionTargets, sweep, type SweepReport } from "../../src/operations/Retention.js"
import { firstRefusesDeletes, queryDatabase } from "../support/Database.js"
import { type Tenant, tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, TestDatabaseUrl, testServerWithDatabase } from "../support/TestServer.js"
import { propose, reply } from "../support/Events.js"

/** Three decisions in a run, one run event and one review for each decision. */
const activity = (base: string, owner: Tenant) =>
  Effect.gen(function* () {
    const run = yield* owner.api.runs.createRun({ payload: { agent_id: "bot", kind: "chat_session" } })
    for (let i = 0; i < 3; i++) {
      const decision = yield* propose(base, owner, "bot", reply(`answer ${i}`), { run_id: run.id })
      yield* owner.api.runs.appendRunEvent({ path: { id: run.id }, payload: { kind: "agent_turn" } })
      yield* owner.api.reviewEvents.createReviewEvent({
        path: { trace_id: decision.trace_id },
        payload: { outcome: "accepted" }
      })
    }
    return run.id
  })

const countsOf = (url: string, workspaceId: string) =>
  Effect.gen(function* () {
    const counts: Record<string, number> = {}
    for (const table of ["traces", "receipts", "run_events", "review_events", "runs"]) {
      const rows = yield* queryDatabase<{ n: string }>(
        url,
        `select count(*)::text as n from ${table} where workspace_id = $1`,
        [workspaceId]
      )
      counts[table] = Number(rows[0]!.n)
    }
    return counts
  })

layer(testServerWithDatabase("database"), SERVER_OPTIONS)("retention_days", (it) => {
  it.effect("deletes records older than each workspace's retention, in batches, on the clock's schedule", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const url = yield* TestDatabaseUrl
      const sql = yield* SqlClient.SqlClient
      const shortLived = yield* tenant(base)
      const longLived = yield* tenant(base)
      yield* shortLived.api.settings.updateSettings({ payload: { retention_days: "30" } })
      yield* longLived.api.settings.updateSettings({ payload: { retention_days: "365" } })
      const runId = yield* activity(base, shortLived)
      yield* activity(base, longLived)
      const full = { traces: 3, receipts: 3, run_events: 3, review_events: 3, runs: 1 }
      expect(yield* countsOf(url, shortLived.workspaceId)).toEqual(full)
      const counters = yield* shortLived.api.runs.getRun({ path: { id: runId } })

      const reports = yield* Queue.unbounded<SweepReport>()
      yield* Effect.gen(function* () {
        yield* TestClock.setTime(Date.now())
        const loop = yield* Effect.fork(
          retentionLoop({ batchSize: 2, interval: "1 day" }, (report) => Queue.offer(reports, report)).pipe(
            Effect.provideService(SqlClient.SqlClient, sql)
          )
        )
        // At start: nothing is 30 days old.
        const first = yield* Queue.take(reports)
        expect(Object.values(first.deleted).every((count) => count === 0)).toBe(true)
        expect(yield* countsOf(url, shortLived.workspaceId)).toEqual(full)

        // Daily sweeps: for 29 days nothing is old enough, one sweep per elapsed interval.
        for (let day = 1; day <= 29; day++) {
          yield* TestClock.adjust("1 day")
          const report = yield* Queue.take(reports)
          expect(
            Object.values(report.deleted).every((count) => count === 0),
            `day ${day}`
          ).toBe(true)
        }
        expect(yield* Queue.size(reports)).toBe(0)
        expect(yield* countsOf(url, shortLived.workspaceId)).toEqual(full)

        // Day 30: the short-lived workspace's records go, in batches of 2; the other keeps its 365 days.
        yield* TestClock.adjust("1 day")
        const late = yield* Queue.take(reports)
        expect(late.deleted).toMatchObject({ traces: 3, receipts: 3, run_events: 3, review_events: 3 })
        expect(late.batches).toBeGreaterThan(retentionTargets.length * 2)
        expect(late.at.getTime() - first.at.getTime()).toBe(30 * 24 * 3600 * 1000)
        expect(yield* countsOf(url, shortLived.workspaceId)).toEqual({
          traces: 0,
          receipts: 0,
          run_events: 0,
          review_events: 0,
          runs: 1
        })
        expect(yield* countsOf(url, longLived.workspaceId)).toEqual(full)
        yield* Fiber.interrupt(loop)
      }).pipe(Effect.provide(TestContext.TestContext))

      // The run and its counters (aggregates) are still served.
      const after = yield* shortLived.api.runs.getRun({ path: { id: runId } })
      expect(after.run.trace_count).toBe(counters.run.trace_count)
      expect(after.events).toEqual([])
      expect(after.traces).toEqual([])
    })
  )

  it.effect("every table the task deletes from has an index leading with its workspace and date columns", () =>
    Effect.gen(function* () {
      const url = yield* TestDatabaseUrl
      // Without one, each batch of each workspace read the whole table (or all of the workspace's rows).
      for (const target of retentionTargets) {
        const rows = yield* queryDatabase<{ indexed: boolean }>(
          url,
          `select exists (
             select 1 from pg_index i join pg_class c on c.oid = i.indrelid
             where c.relname = $1 and pg_table_is_visible(c.oid)
               and (select attname from pg_attribute where attrelid = c.oid and attnum = i.indkey[0]) = $2
               and (select attname from pg_attribute where attrelid = c.oid and attnum = i.indkey[1]) = $3
           ) as indexed`,
          [target.table, target.workspaceColumn, target.timeColumn]
        )
        expect(rows[0]?.indexed, target.table).toBe(true)
      }
    })
  )

  it.effect("every foreign key into those tables has an index leading with its columns", () =>
    Effect.gen(function* () {
      const url = yield* TestDatabaseUrl
      // A deleted row's cascade (or check) runs `where <fk columns> = $1` on the referencing table once per row:
      // without such an index, each row of a batch scanned that whole table.
      const unindexed = yield* queryDatabase<{ fk: string }>(
        url,
        `select c.conname as fk from pg_constraint c
         where c.contype = 'f' and c.confrelid::regclass::text = any($1)
           and not exists (
             select 1 from pg_index i
             where i.indrelid = c.conrelid
               and (i.indkey::int2[])[0:cardinality(c.conkey) - 1] = c.conkey::int2[])`,
        [retentionTargets.map((target) => target.table)]
      )
      expect(unindexed).toEqual([])
    })
  )

  it.effect("a workspace whose deletes fail is skipped; the sweep goes on with the next", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const url = yield* TestDatabaseUrl
      const sql = yield* SqlClient.SqlClient
      const owners = [yield* tenant(base), yield* tenant(base)]
      for (const owner of owners) {
        yield* owner.api.settings.updateSettings({ payload: { retention_days: "1" } })
        yield* propose(base, owner, "bot", reply("an old answer"))
        yield* queryDatabase(url, `update traces set created_at = now() - interval '3 days' where workspace_id = $1`, [
          owner.workspaceId
        ])
      }
      // The first workspace of the sweep's order refuses to lose its traces.
      const [refusing, [next]] = yield* firstRefusesDeletes(url, "traces", owners)
      const report = yield* sweep(100).pipe(Effect.provideService(SqlClient.SqlClient, sql))
      expect(report.failed).toBe(1)
      const left = (owner: Tenant) =>
        Effect.map(
          queryDatabase<{ n: string }>(url, "select count(*)::text as n from traces where workspace_id = $1", [
            owner.workspaceId
          ]),
          (rows) => Number(rows[0]!.n)
        )
      expect(yield* left(refusing)).toBe(1)
      expect(yield* left(next!)).toBe(0)
    }).pipe(Effect.scoped)
  )
})
