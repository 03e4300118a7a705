/**
 * One workspace's slow reports never hold every report permit. With
 * MAX_CONCURRENT_REPORTS=3 and MAX_CONCURRENT_REPORTS_PER_WORKSPACE=1,
 * workspace A sends more analytics queries than the process has report
 * permits, each waiting behind another session's lock on the aggregates (as a
 * report over a long history would run for seconds). Only one of them holds a
 * permit and a connection; the others wait for A's own permit, holding none,
 * so workspace B's report still answers 200 (before, A's reports took every
 * permit and B's waited behind them). Once the lock is gone, every one of A's
 * reports answers 200 in turn.
 *
 * Then the permits themselves (src/http/ReportPermits.ts): a workspace waiting
 * holds no permit of the process, its next report gets the permit when one
 * ends, an abandoned wait leaks nothing, and no workspace stays in the table
 * once it holds and awaits nothing.
 */
import { describe, expect, it, layer } from "@effect/vitest"
import { Effect, Fiber, FiberStatus } from "effect"
import { makeReportPermits } from "../../src/http/ReportPermits.js"
import { forkedQueries } from "../analytics/analytics-helpers.js"
import { lockedTable, serviceWaitsOnLocks } from "../support/Database.js"
import { until } from "../support/Eventually.js"
import { call } from "../support/Raw.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, TestDatabaseUrl, testServerWithDatabase } from "../support/TestServer.js"

const PER_PROCESS = 3
const PER_WORKSPACE = 1
/** A's reports: more than the process has permits. */
const A_REPORTS = PER_PROCESS + 2

layer(
  testServerWithDatabase("database", {
    MAX_CONCURRENT_REPORTS: String(PER_PROCESS),
    MAX_CONCURRENT_REPORTS_PER_WORKSPACE: String(PER_WORKSPACE),
    DATABASE_STATEMENT_TIMEOUT_MS: "60000"
  }),
  SERVER_OPTIONS
)("one workspace's slow reports and another workspace's report", (it) => {
  it.effect(
    "another workspace's report answers while one workspace has more slow reports than the process has permits",
    () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const url = yield* TestDatabaseUrl
        const a = yield* tenant(base)
        const b = yield* tenant(base)
        const bReport = call(base, "GET", "/v1/traces", { token: b.jwt })
        expect((yield* bReport).status).toBe(200)

        const aAnswers = yield* Effect.scoped(
          Effect.gen(function* () {
            yield* lockedTable(url, "analytics_buckets")
            const aReports = yield* forkedQueries(base, a.jwt, A_REPORTS)
            // One of A's reports holds a permit and a connection, waiting on the lock.
            yield* until(
              Effect.filterOrFail(serviceWaitsOnLocks(url, "analytics_buckets"), (n) => n >= 1),
              "10 seconds"
            )
            const answer = yield* bReport
            expect(answer.status, JSON.stringify(answer.body)).toBe(200)
            // A's other reports wait for A's own permit: none of them reached the database.
            expect(yield* serviceWaitsOnLocks(url, "analytics_buckets")).toBe(PER_WORKSPACE)
            return aReports
          })
        ).pipe(Effect.flatMap(Fiber.join))
        expect(aAnswers.map((answer) => answer.status)).toEqual(Array(A_REPORTS).fill(200))
      }),
    180_000
  )
})

/** Until `fiber` waits (suspended on a permit): a condition, not a sleep. */
const untilWaiting = <A, E>(fiber: Fiber.RuntimeFiber<A, E>) =>
  Effect.gen(function* () {
    while (!FiberStatus.isSuspended(yield* Fiber.status(fiber))) yield* Effect.yieldNow()
  })

describe("report permits", () => {
  it.effect("a workspace's waiting report holds no permit of the process", () =>
    Effect.gen(function* () {
      const permits = makeReportPermits(2, 1)
      const [a1, a2, b1] = [permits.turn(), permits.turn(), permits.turn()]
      yield* a1.admit("A")
      const waiting = yield* Effect.fork(a2.admit("A"))
      yield* untilWaiting(waiting)
      // The process's second permit is still free for another workspace.
      yield* b1.admit("B")
      expect(permits.workspacesInUse()).toBe(2)
      yield* a1.end
      yield* Fiber.join(waiting)
      yield* Effect.forEach([a2, b1], (turn) => turn.end)
      expect(permits.workspacesInUse()).toBe(0)
    })
  )

  it.effect("a workspace's next report waits for the process's permit once it has its own", () =>
    Effect.gen(function* () {
      const permits = makeReportPermits(1, 1)
      const [a1, b1] = [permits.turn(), permits.turn()]
      yield* a1.admit("A")
      const waiting = yield* Effect.fork(b1.admit("B"))
      yield* untilWaiting(waiting)
      yield* a1.end
      yield* Fiber.join(waiting)
      yield* b1.end
      expect(permits.workspacesInUse()).toBe(0)
    })
  )

  it.effect("an abandoned wait takes nothing and leaves nothing behind", () =>
    Effect.gen(function* () {
      const permits = makeReportPermits(2, 1)
      const [a1, a2] = [permits.turn(), permits.turn()]
      yield* a1.admit("A")
      const waiting = yield* Effect.fork(a2.admit("A"))
      yield* untilWaiting(waiting)
      // The client went away: the request's fiber is interrupted, then its turn ends.
      yield* Fiber.interrupt(waiting)
      yield* a2.end
      expect(permits.workspacesInUse()).toBe(1)
      yield* a1.end
      expect(permits.workspacesInUse()).toBe(0)
      // Every permit is back: two workspaces take the process's two at once, A its own one.
      const [a3, b1] = [permits.turn(), permits.turn()]
      yield* a3.admit("A")
      yield* b1.admit("B")
      yield* Effect.forEach([a3, b1], (turn) => turn.end)
      expect(permits.workspacesInUse()).toBe(0)
    })
  )
})
