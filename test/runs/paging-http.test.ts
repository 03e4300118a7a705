/**
 * Keyset paging when several rows share one millisecond. PostgreSQL keeps
 * timestamps to the microsecond; rows created by concurrent requests often
 * fall within the same millisecond. Here that is made certain: after
 * creating rows over the API, their created_at is set (in the service's own
 * database) to distinct microseconds of one millisecond, keeping their
 * order. Paging through runs, traces and review events must still return
 * every row exactly once. A run's events page ends early once its metadata
 * passes MAX_PAGE_BYTES, and the next page goes on from there; so does a
 * page of traces (and the live tail) once their payloads pass it, and of a
 * trace's reviews once their metadata does; a window around one event or
 * trace holds what fits in half the budget on each side.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { type Run, TraceId } from "../../src/runs/Domain.js"
import { MAX_PAGE_BYTES } from "../../src/platform/PageBytes.js"
import { queryDatabase } from "../support/Database.js"
import { tenant, type Tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, TestDatabaseUrl, testServerWithDatabase } from "../support/TestServer.js"
import { allPages } from "./runs-helpers.js"
import { createRun, propose, reply } from "../support/Events.js"

const COUNT = 7

/** Moves the workspace's rows of `table` into one millisecond, one microsecond apart, in their current order. */
const squeezeIntoOneMillisecond = (databaseUrl: string, table: "runs" | "traces" | "review_events", owner: Tenant) =>
  queryDatabase(
    databaseUrl,
    `with ordered as (
       select id, row_number() over (order by created_at, id) as n from ${table} where workspace_id = $1
     )
     update ${table} t set created_at = timestamptz '2026-03-04 05:06:07.123+00' + (ordered.n * interval '1 microsecond')
     from ordered where t.id = ordered.id`,
    [owner.workspaceId]
  )

const expectAllOnce = (pages: ReadonlyArray<ReadonlyArray<string>>, expected: ReadonlyArray<string>) => {
  const seen = pages.flat()
  expect(new Set(seen).size, JSON.stringify(pages)).toBe(seen.length)
  expect([...seen].sort(), JSON.stringify(pages)).toEqual([...expected].sort())
}

layer(testServerWithDatabase("database"), SERVER_OPTIONS)("paging within one millisecond", (it) => {
  it.effect("GET /v1/runs pages every run exactly once", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const databaseUrl = yield* TestDatabaseUrl
      const owner = yield* tenant(base)
      const runs: Array<Run> = []
      for (let i = 0; i < COUNT; i++) runs.push(yield* createRun(base, owner, { agent_id: "a", kind: "job" }))
      yield* squeezeIntoOneMillisecond(databaseUrl, "runs", owner)

      const pages = yield* allPages("runs", (cursor) => owner.api.runs.listRuns({ urlParams: { limit: 2, ...cursor } }))
      expectAllOnce(
        pages.map((page) => page.map((run) => run.id)),
        runs.map((run) => run.id)
      )
    })
  )

  it.effect("GET /v1/traces and GET /v1/runs/{id}/traces page every trace exactly once", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const databaseUrl = yield* TestDatabaseUrl
      const owner = yield* tenant(base)
      const run = yield* createRun(base, owner, { agent_id: "a", kind: "job" })
      const traceIds: Array<string> = []
      for (let i = 0; i < COUNT; i++) {
        traceIds.push((yield* propose(base, owner, "a", reply(`m ${i}`), { run_id: run.id })).trace_id)
      }
      yield* squeezeIntoOneMillisecond(databaseUrl, "traces", owner)

      const pages = yield* allPages("traces", (cursor) =>
        owner.api.traces.listTraces({ urlParams: { limit: 2, ...cursor } })
      )
      expectAllOnce(
        pages.map((page) => page.map((trace) => trace.trace_id)),
        traceIds
      )
      const runPages = yield* allPages("traces", (cursor) =>
        owner.api.runs.listRunTraces({ path: { id: run.id }, urlParams: { limit: 3, ...cursor } })
      )
      expectAllOnce(
        runPages.map((page) => page.map((trace) => trace.trace_id)),
        traceIds
      )
    })
  )

  it.effect("GET /v1/traces/{id}/review-events pages every review exactly once", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const databaseUrl = yield* TestDatabaseUrl
      const owner = yield* tenant(base)
      const decision = yield* propose(base, owner, "a", reply("hello"))
      const reviewIds: Array<string> = []
      for (let i = 0; i < COUNT; i++) {
        const review = yield* owner.api.reviewEvents.createReviewEvent({
          path: { trace_id: decision.trace_id },
          payload: { outcome: "accepted" }
        })
        reviewIds.push(review.id)
      }
      yield* squeezeIntoOneMillisecond(databaseUrl, "review_events", owner)

      const pages = yield* allPages("review_events", (cursor) =>
        owner.api.reviewEvents.listReviewEvents({
          path: { trace_id: decision.trace_id },
          urlParams: { limit: 2, ...cursor }
        })
      )
      expectAllOnce(
        pages.map((page) => page.map((item) => item.id)),
        reviewIds
      )
    })
  )

  it.effect("GET /v1/runs/{id}/events ends a page once its metadata passes MAX_PAGE_BYTES", () =>
    Effect.gen(function* () {
      const owner = yield* tenant(yield* baseUrl)
      const run = yield* owner.api.runs.createRun({ payload: { agent_id: "bulky", kind: "workflow" } })
      // About 600 KB of metadata an event (ten keys of 60,000 characters): the budget holds about seven.
      const metadata = Object.fromEntries(Array.from({ length: 10 }, (_, key) => [`k${key}`, "m".repeat(60_000)]))
      for (let i = 0; i < 10; i++) {
        yield* owner.api.runs.appendRunEvent({ path: { id: run.id }, payload: { kind: "tool_call", metadata } })
      }
      const pages = yield* allPages("events", (cursor) =>
        owner.api.runs.listRunEvents({ path: { id: run.id }, urlParams: { limit: 200, ...cursor } })
      )
      const bytes = (page: ReadonlyArray<{ readonly metadata: unknown }>) =>
        page.reduce((sum, event) => sum + JSON.stringify(event.metadata).length, 0)
      expect(pages.length).toBeGreaterThan(1)
      // Each page stops at the first event that reaches the budget.
      for (const page of pages) expect(bytes(page.slice(0, -1))).toBeLessThan(MAX_PAGE_BYTES)
      expect(pages.flat().map((event) => event.sequence)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
    })
  )

  it.effect("GET /v1/traces and its live tail end a page once the traces' payloads pass MAX_PAGE_BYTES", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const start = (yield* owner.api.traces.listTraces({ urlParams: {} })).tail_cursor!
      // Three 250,000-character params a decision (within the default 256 KiB match cap): about 750 KB each.
      const big = (i: number, key: string) => `${key}${i} ${"x".repeat(250_000)}`
      const decided: Array<string> = []
      for (let i = 0; i < COUNT; i++) {
        const action = { operation: "send_note", params: { a: big(i, "a"), b: big(i, "b"), c: big(i, "c") } }
        decided.push((yield* propose(base, owner, "bulky", action)).trace_id)
      }
      const bytes = (page: ReadonlyArray<{ readonly payload: unknown }>) =>
        page.reduce((sum, trace) => sum + JSON.stringify(trace.payload).length, 0)
      const pages = yield* allPages("traces", (cursor) =>
        owner.api.traces.listTraces({ urlParams: { limit: 100, ...cursor } })
      )
      // Seven of about 750 KB: the first page stops at the trace that reaches 4 MiB, the sixth.
      expect(pages.map((page) => page.length)).toEqual([6, 1])
      for (const page of pages) expect(bytes(page.slice(0, -1))).toBeLessThan(MAX_PAGE_BYTES)
      expectAllOnce(
        pages.map((page) => page.map((trace) => trace.trace_id)),
        decided
      )
      // The tail stops there too, and its next poll goes on from there.
      const tail = yield* owner.api.traces.listTraces({ urlParams: { limit: 100, after: start } })
      expect(tail.traces.map((trace) => trace.trace_id)).toEqual(decided.slice(0, 6))
      const rest = yield* owner.api.traces.listTraces({ urlParams: { limit: 100, after: tail.tail_cursor! } })
      expect(rest.traces.map((trace) => trace.trace_id)).toEqual(decided.slice(6))
    })
  )

  it.effect("GET /v1/traces/{id}/review-events ends a page once the reviews' metadata passes MAX_PAGE_BYTES", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const decision = yield* propose(base, owner, "a", reply("hello"))
      // Thirteen keys of 60,000 characters a review: about 780 KB of metadata each.
      const metadata = Object.fromEntries(Array.from({ length: 13 }, (_, key) => [`k${key}`, "r".repeat(60_000)]))
      const reviewIds: Array<string> = []
      for (let i = 0; i < COUNT; i++) {
        const review = yield* owner.api.reviewEvents.createReviewEvent({
          path: { trace_id: decision.trace_id },
          payload: { outcome: "accepted", metadata }
        })
        reviewIds.push(review.id)
      }
      const pages = yield* allPages("review_events", (cursor) =>
        owner.api.reviewEvents.listReviewEvents({
          path: { trace_id: decision.trace_id },
          urlParams: { limit: 100, ...cursor }
        })
      )
      expect(pages.map((page) => page.length)).toEqual([6, 1])
      expectAllOnce(
        pages.map((page) => page.map((item) => item.id)),
        reviewIds
      )
    })
  )

  it.effect(
    "a window around one event or trace holds at most about MAX_PAGE_BYTES, with next_cursor for the rest",
    () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const run = yield* owner.api.runs.createRun({ payload: { agent_id: "bulky", kind: "workflow" } })
        // About 600 KB of metadata an event: each side of the window holds what fits in half the budget.
        const metadata = Object.fromEntries(Array.from({ length: 10 }, (_, key) => [`k${key}`, "m".repeat(60_000)]))
        const events = []
        for (let i = 0; i < 10; i++) {
          const event = yield* owner.api.runs.appendRunEvent({
            path: { id: run.id },
            payload: { kind: "tool_call", metadata }
          })
          events.push(event)
        }
        const window = yield* owner.api.runs.listRunEvents({
          path: { id: run.id },
          urlParams: { around: events[4]!.id, limit: 200 }
        })
        // Four on each side of 2 MiB: events 1..4, then the 5th and 6..8; the 9th and 10th follow the cursor.
        expect(window.events.map((event) => event.sequence)).toEqual([1, 2, 3, 4, 5, 6, 7, 8])
        const rest = yield* owner.api.runs.listRunEvents({
          path: { id: run.id },
          urlParams: { limit: 200, cursor: window.next_cursor! }
        })
        expect(rest.events.map((event) => event.sequence)).toEqual([9, 10])

        // Seven traces of about 750 KB in one run, newest first: around the 4th, three newer and three older.
        const big = (i: number, key: string) => `${key}${i} ${"x".repeat(250_000)}`
        const traces: Array<string> = []
        for (let i = 0; i < COUNT; i++) {
          const action = { operation: "send_note", params: { a: big(i, "a"), b: big(i, "b"), c: big(i, "c") } }
          traces.push((yield* propose(base, owner, "bulky", action, { run_id: run.id })).trace_id)
        }
        const around = yield* owner.api.runs.listRunTraces({
          path: { id: run.id },
          urlParams: { around: TraceId.make(traces[3]!), limit: 100 }
        })
        expect(around.traces.map((trace) => trace.trace_id)).toEqual([...traces].reverse().slice(0, 6))
        const older = yield* owner.api.runs.listRunTraces({
          path: { id: run.id },
          urlParams: { limit: 100, cursor: around.next_cursor! }
        })
        expect(older.traces.map((trace) => trace.trace_id)).toEqual([traces[0]])
      })
  )
})
