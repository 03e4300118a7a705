/**
 * The extension `around` on a run's lists, over HTTP against the real
 * service and PostgreSQL: `GET /v1/runs/{id}/events?around=<event id>` lists
 * the `limit` events nearest that event by sequence, in order (topped up
 * from the other side near either end), with next_cursor paging on after the
 * window; `GET /v1/runs/{id}/traces?around=<trace id>` does the same in the
 * traces' newest-first order. An id outside the run is 404, `around` with
 * `cursor` is 400, and another workspace sees nothing.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import type { RunEvent, RunId, TraceId } from "../../src/runs/Domain.js"
import { call, expectError, expectValidation } from "../support/Raw.js"
import { tenant, type Tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import { appendEvent } from "./runs-helpers.js"
import { createAgent, createRun, propose, reply } from "../support/Events.js"

const AGENT = "support-bot"

const sequences = (events: ReadonlyArray<{ sequence: number }>) => events.map((event) => event.sequence)
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i)

/** A run of `count` events appended one after another, and its events by sequence. */
const runWithEvents = (base: string, owner: Tenant, count: number) =>
  Effect.gen(function* () {
    const run = yield* createRun(base, owner, { agent_id: AGENT, kind: "chat_session" })
    for (let i = 1; i <= count; i++) yield* appendEvent(base, owner, run.id, { kind: "custom", label: `e-${i}` })
    const { events } = yield* owner.api.runs.listRunEvents({ path: { id: run.id }, urlParams: { limit: 200 } })
    expect(sequences(events)).toEqual(range(1, count))
    return { run, events }
  })

const eventsAround = (owner: Tenant, runId: RunId, event: RunEvent, limit: number) =>
  owner.api.runs.listRunEvents({ path: { id: runId }, urlParams: { around: event.id, limit } })

layer(testServer("database"), SERVER_OPTIONS)("a run's neighbours (around)", (it) => {
  describe("GET /v1/runs/{id}/events?around=", () => {
    it.effect("the window around an event, in sequence order, topped up near the ends, paging on after it", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const { events, run } = yield* runWithEvents(base, owner, 30)
        const event = (sequence: number) => events[sequence - 1]!

        // Five before and five after event 25: 20..30, the last of the run, so no next_cursor.
        const late = yield* eventsAround(owner, run.id, event(25), 11)
        expect(sequences(late.events)).toEqual(range(20, 30))
        expect(late.events[5]!.id).toBe(event(25).id)
        expect(late.events.map((e) => e.label)).toEqual(range(20, 30).map((n) => `e-${n}`))
        expect(late.next_cursor).toBeUndefined()

        // In the middle: 5..15, and next_cursor continues with 16.
        const middle = yield* eventsAround(owner, run.id, event(10), 11)
        expect(sequences(middle.events)).toEqual(range(5, 15))
        expect(typeof middle.next_cursor).toBe("string")
        const after = yield* owner.api.runs.listRunEvents({
          path: { id: run.id },
          urlParams: { limit: 3, ...(middle.next_cursor === undefined ? {} : { cursor: middle.next_cursor }) }
        })
        expect(sequences(after.events)).toEqual([16, 17, 18])

        // Near either end the window is topped up from the other side.
        expect(sequences((yield* eventsAround(owner, run.id, event(2), 11)).events)).toEqual(range(1, 11))
        expect(sequences((yield* eventsAround(owner, run.id, event(29), 11)).events)).toEqual(range(20, 30))
        // An even limit: one more before than after.
        expect(sequences((yield* eventsAround(owner, run.id, event(25), 10)).events)).toEqual(range(20, 29))
        expect(sequences((yield* eventsAround(owner, run.id, event(25), 1)).events)).toEqual([25])
        // The cap (200) holds the whole run.
        expect(sequences((yield* eventsAround(owner, run.id, event(25), 1000)).events)).toEqual(range(1, 30))
      })
    )

    it.effect("an event outside the run is 404; with cursor, or too long, 400; another workspace sees nothing", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const { events, run } = yield* runWithEvents(base, owner, 3)
        const other = yield* runWithEvents(base, owner, 1)
        const path = (runId: string, query: string) => `/v1/runs/${runId}/events?${query}`
        const get = (runId: string, query: string, token = owner.jwt) => call(base, "GET", path(runId, query), { token })

        expectError(yield* get(run.id, "around=rev_nope"), 404, "run_event_not_found")
        expectError(yield* get(run.id, `around=${other.events[0]!.id}`), 404, "run_event_not_found")
        const page = yield* owner.api.runs.listRunEvents({ path: { id: run.id }, urlParams: { limit: 1 } })
        expectValidation(yield* get(run.id, `around=${events[1]!.id}&cursor=${page.next_cursor ?? ""}`), "around")
        expectValidation(yield* get(run.id, `around=${"x".repeat(5000)}`), "around")
        expectValidation(yield* get(run.id, `around=${events[1]!.id}&limit=-1`), "limit")

        const stranger = yield* tenant(base)
        expectError(yield* get(run.id, `around=${events[1]!.id}`, stranger.jwt), 404, "run_not_found")
      })
    )
  })

  describe("GET /v1/runs/{id}/traces?around=", () => {
    it.effect("the decisions around a trace, newest first, with next_cursor to the older ones", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        yield* createAgent(base, owner, AGENT)
        const run = yield* createRun(base, owner, { agent_id: AGENT, kind: "chat_session" })
        const elsewhere = yield* propose(base, owner, AGENT, reply("not in the run"))
        for (let i = 0; i < 12; i++) yield* propose(base, owner, AGENT, reply(`turn ${i}`), { run_id: run.id })
        const listRunTraces = (urlParams: { around?: TraceId; limit?: number; cursor?: string }) =>
          owner.api.runs.listRunTraces({ path: { id: run.id }, urlParams })
        const all = (yield* listRunTraces({ limit: 100 })).traces.map((t) => t.trace_id)
        expect(all).toHaveLength(12)

        // The 9th newest: two newer and two older around it; then the older ones after the window.
        const window = yield* listRunTraces({ around: all[8]!, limit: 5 })
        expect(window.traces.map((t) => t.trace_id)).toEqual(all.slice(6, 11))
        const older = yield* listRunTraces({ limit: 5, ...(window.next_cursor ? { cursor: window.next_cursor } : {}) })
        expect(older.traces.map((t) => t.trace_id)).toEqual(all.slice(11))
        // The newest: topped up with older ones.
        expect((yield* listRunTraces({ around: all[0]!, limit: 5 })).traces.map((t) => t.trace_id)).toEqual(
          all.slice(0, 5)
        )

        const get = (query: string) => call(base, "GET", `/v1/runs/${run.id}/traces?${query}`, { token: owner.jwt })
        expectError(yield* get(`around=${elsewhere.trace_id}`), 404, "trace_not_found")
        expectValidation(yield* get(`around=${all[3]!}&cursor=${window.next_cursor ?? ""}`), "around")
      })
    )
  })
})
