/**
 * Lists of client JSON end a page early at MAX_PAGE_BYTES, over HTTP
 * against the real service and PostgreSQL: a decision's trace carries its
 * event's metadata (up to a request body), so 200 of them made one answer of
 * up to 200 MiB. Trace pages, the live tail and the `around` windows of a
 * run's traces and events each stop at the row that reaches the budget (at
 * least one a page) and say so with their cursor; following it lists every
 * row once, in order.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { MAX_PAGE_BYTES } from "../../src/platform/PageBytes.js"
import type { TraceId } from "../../src/runs/Domain.js"
import { createRun, propose, reply } from "../support/Events.js"
import { tenant, type Tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import { allPages } from "./runs-helpers.js"

const COUNT = 10
/** About 600 KB of metadata (ten keys of 60,000 characters): a page's budget holds about seven. */
const BULKY = Object.fromEntries(Array.from({ length: 10 }, (_, key) => [`k${key}`, "m".repeat(60_000)]))

const bytesOf = (rows: ReadonlyArray<unknown>) => rows.reduce<number>((sum, row) => sum + JSON.stringify(row).length, 0)

/** Every page but its last row stays under the budget: it stops at the first row that reaches it. */
const expectCutAtBudget = (pages: ReadonlyArray<ReadonlyArray<unknown>>, budget: number) => {
  expect(pages.length).toBeGreaterThan(1)
  for (const page of pages) {
    expect(page.length).toBeGreaterThan(0)
    expect(bytesOf(page.slice(0, -1))).toBeLessThan(budget)
  }
}

/** A run with COUNT bulky decisions and COUNT bulky events; trace ids oldest first. */
const bulkyRun = (base: string, owner: Tenant) =>
  Effect.gen(function* () {
    const run = yield* createRun(base, owner, { agent_id: "bulky", kind: "job" })
    const traceIds: Array<TraceId> = []
    for (let i = 0; i < COUNT; i++) {
      const decision = yield* propose(base, owner, "bulky", reply(`m ${i}`), { run_id: run.id, metadata: BULKY })
      traceIds.push(decision.trace_id)
      yield* owner.api.runs.appendRunEvent({ path: { id: run.id }, payload: { kind: "tool_call", metadata: BULKY } })
    }
    return { run, traceIds }
  })

layer(testServer("database"), SERVER_OPTIONS)("pages of client JSON end at MAX_PAGE_BYTES", (it) => {
  it.effect("GET /v1/traces and GET /v1/runs/{id}/traces page bulky traces within the budget, each once", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const { run, traceIds } = yield* bulkyRun(base, owner)
      const newestFirst = [...traceIds].reverse()

      const pages = yield* allPages("traces", (cursor) =>
        owner.api.traces.listTraces({ urlParams: { limit: 200, ...cursor } })
      )
      expect(bytesOf(pages[0]!.slice(0, 1))).toBeGreaterThan(600_000)
      expectCutAtBudget(pages, MAX_PAGE_BYTES)
      expect(pages.flat().map((trace) => trace.trace_id)).toEqual(newestFirst)

      const runPages = yield* allPages("traces", (cursor) =>
        owner.api.runs.listRunTraces({ path: { id: run.id }, urlParams: { limit: 200, ...cursor } })
      )
      expectCutAtBudget(runPages, MAX_PAGE_BYTES)
      expect(runPages.flat().map((trace) => trace.trace_id)).toEqual(newestFirst)

      // One trace is whole however large.
      const one = yield* owner.api.traces.getTrace({ path: { trace_id: traceIds[3]! } })
      expect(one.trace_id).toBe(traceIds[3])
    })
  )

  it.effect("the live tail stops at the budget and its tail_cursor goes on from there", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const first = yield* owner.api.traces.listTraces({ urlParams: { limit: 1 } })
      const { traceIds } = yield* bulkyRun(base, owner)

      const polls: Array<ReadonlyArray<string>> = []
      let after = first.tail_cursor!
      for (let poll = 0; poll < 5 && polls.flat().length < COUNT; poll++) {
        const tail = yield* owner.api.traces.listTraces({ urlParams: { limit: 200, after } })
        expect(bytesOf(tail.traces.slice(0, -1))).toBeLessThan(MAX_PAGE_BYTES)
        polls.push(tail.traces.map((trace) => trace.trace_id))
        after = tail.tail_cursor!
      }
      expect(polls.length).toBeGreaterThan(1)
      expect(polls.flat()).toEqual(traceIds)
    })
  )

  it.effect("the around windows of a run's traces and events hold half the budget each side, paging on after", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const { run, traceIds } = yield* bulkyRun(base, owner)

      // The fifth of ten traces: each side stops at the trace that reaches 2 MiB.
      const target = traceIds[4]!
      const around = yield* owner.api.runs.listRunTraces({
        path: { id: run.id },
        urlParams: { around: target, limit: 200 }
      })
      const ids = around.traces.map((trace) => trace.trace_id)
      expect(ids).toContain(target)
      expect(ids.length).toBeLessThan(COUNT)
      expect(bytesOf(around.traces)).toBeLessThan(MAX_PAGE_BYTES + 2 * 700_000)
      // A contiguous stretch of the run, newest first, and next_cursor lists the older rest.
      const newestFirst = [...traceIds].reverse()
      const start = newestFirst.indexOf(ids[0]!)
      expect(ids).toEqual(newestFirst.slice(start, start + ids.length))
      expect(typeof around.next_cursor).toBe("string")
      const older = yield* allPages("traces", (cursor) =>
        owner.api.runs.listRunTraces({
          path: { id: run.id },
          // The first page goes on from the window's next_cursor.
          urlParams: { limit: 200, cursor: around.next_cursor!, ...cursor }
        })
      )
      expect(ids.concat(older.flat().map((trace) => trace.trace_id))).toEqual(newestFirst.slice(start))

      const all = yield* allPages("events", (cursor) =>
        owner.api.runs.listRunEvents({ path: { id: run.id }, urlParams: { limit: 200, ...cursor } })
      )
      const sequences = all.flat().map((event) => event.sequence)
      expect(sequences).toEqual(Array.from({ length: COUNT }, (_, i) => i + 1))
      const middle = all.flat()[4]!
      const window = yield* owner.api.runs.listRunEvents({
        path: { id: run.id },
        urlParams: { around: middle.id, limit: 200 }
      })
      const windowSequences = window.events.map((event) => event.sequence)
      expect(windowSequences).toContain(middle.sequence)
      expect(windowSequences.length).toBeLessThan(COUNT)
      expect(bytesOf(window.events)).toBeLessThan(MAX_PAGE_BYTES + 2 * 700_000)
      const from = windowSequences[0]!
      expect(windowSequences).toEqual(Array.from({ length: windowSequences.length }, (_, i) => from + i))
      expect(typeof window.next_cursor).toBe("string")
      const later = yield* owner.api.runs.listRunEvents({
        path: { id: run.id },
        urlParams: { limit: 200, cursor: window.next_cursor! }
      })
      expect(later.events[0]!.sequence).toBe(windowSequences[windowSequences.length - 1]! + 1)
    })
  )
})
