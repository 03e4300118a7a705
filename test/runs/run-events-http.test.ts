/**
 * Run events over HTTP against the real service and PostgreSQL: appends
 * answer 201 with sequences 1, 2, 3...; the list is ordered by sequence with
 * a limit capped at 200 and cursor paging; a terminal run takes no more
 * events (409 run_ended); 50 concurrent appends get exactly 1..50.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import type { RunEvent, RunId } from "../../src/runs/Domain.js"
import { TIMESTAMP } from "../support/Formats.js"
import { expectFailure, expectInvalid, keysOf, withRaw } from "../support/Api.js"
import { call, expectValidation } from "../support/Raw.js"
import { tenant, type Tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import { allPages, appendEvent, type CursorParams, forgedCursor, getRun } from "./runs-helpers.js"
import { createRun } from "../support/Events.js"

const EVENT_KEYS = [
  "created_at",
  "id",
  "input_summary",
  "kind",
  "label",
  "metadata",
  "occurred_at",
  "output_summary",
  "run_id",
  "sequence",
  "workspace_id"
]

const KINDS = ["user_turn", "agent_turn", "tool_call", "tool_result", "retrieval", "handoff", "error", "custom"]

const listEvents = (owner: Tenant, runId: RunId, query: { readonly limit?: number } & CursorParams = {}) =>
  owner.api.runs.listRunEvents({ path: { id: runId }, urlParams: query })

/** Appends `count` events, `concurrency` at a time. */
const appendMany = (base: string, owner: Tenant, runId: string, count: number, concurrency = 10) =>
  Effect.forEach(
    Array.from({ length: count }, (_, i) => i),
    (i) => appendEvent(base, owner, runId, { kind: "custom", label: `e-${i}` }),
    { concurrency }
  )

const sequences = (events: ReadonlyArray<{ sequence: number }>) => events.map((event) => event.sequence)
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i)

layer(testServer("database"), SERVER_OPTIONS)("run events (database event log)", (it) => {
  describe("POST /v1/runs/{id}/events", () => {
    it.effect("appends answer 201 with sequence 1, 2, 3... and echo the fields sent", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const run = yield* createRun(base, owner, { agent_id: "a", kind: "chat_session" })

        const { body, value: first } = yield* withRaw(
          owner.api.runs.appendRunEvent({
            path: { id: run.id },
            payload: {
              kind: "user_turn",
              label: "greeting",
              input_summary: "Hi, where is my order?",
              metadata: { channel: "web" },
              occurred_at: "2026-01-02T03:04:05.678Z"
            },
            withResponse: true
          })
        )
        expect(keysOf(body)).toEqual(EVENT_KEYS)
        expect(first).toMatchObject({
          run_id: run.id,
          workspace_id: owner.workspaceId,
          kind: "user_turn",
          sequence: 1,
          label: "greeting",
          input_summary: "Hi, where is my order?",
          output_summary: null,
          metadata: { channel: "web" },
          occurred_at: "2026-01-02T03:04:05.678Z"
        })
        expect(first.created_at).toMatch(TIMESTAMP)

        const rest: Array<RunEvent> = []
        for (const kind of KINDS.slice(1)) rest.push(yield* appendEvent(base, owner, run.id, { kind }))
        expect(sequences(rest)).toEqual(range(2, KINDS.length))
        // Without occurred_at the receipt time is used.
        expect(rest[0]!.occurred_at).toMatch(TIMESTAMP)
        expect(rest[0]!.label).toBeNull()
        expect(rest[0]!.metadata).toBeNull()
        expect(new Set([first.id, ...rest.map((event) => event.id)]).size).toBe(KINDS.length)

        // Sequences are per run.
        const other = yield* createRun(base, owner, { agent_id: "a", kind: "job" })
        expect((yield* appendEvent(base, owner, other.id, { kind: "custom" })).sequence).toBe(1)
      })
    )

    it.effect("an unknown or missing kind, or a bad occurred_at, is 400 and takes no sequence", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const run = yield* createRun(base, owner, { agent_id: "a", kind: "job" })
        const post = (body: unknown) => call(base, "POST", `/v1/runs/${run.id}/events`, { token: owner.jwt, body })
        for (const kind of ["thought", "USER_TURN", "", 1]) expectValidation(yield* post({ kind }), "kind")
        expectValidation(yield* post({}), "kind")
        yield* expectInvalid(
          owner.api.runs.appendRunEvent({
            path: { id: run.id },
            payload: { kind: "user_turn", occurred_at: "yesterday" }
          }),
          "occurred_at"
        )
        // `Date` would read these as some date (March 2nd, year 2001, local time): not RFC 3339 instants.
        for (const occurred_at of ["2026-02-30T00:00:00Z", "1.5", "2026-11-24T10:00:00", "0000-01-01T00:00:00Z"]) {
          expectValidation(yield* post({ kind: "user_turn", occurred_at }), "occurred_at")
        }
        expectValidation(yield* post({ kind: "user_turn", label: 5 }), "label")
        expect((yield* appendEvent(base, owner, run.id, { kind: "user_turn" })).sequence).toBe(1)
      })
    )

    it.effect("a terminal run takes no more events: 409 run_ended; a warming run takes them", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const warming = yield* createRun(base, owner, { agent_id: "a", kind: "live_call", status: "warming" })
        expect((yield* appendEvent(base, owner, warming.id, { kind: "custom" })).sequence).toBe(1)

        for (const terminal of ["completed", "failed", "canceled"] as const) {
          const run = yield* createRun(base, owner, { agent_id: "a", kind: "job" })
          yield* appendEvent(base, owner, run.id, { kind: "user_turn" })
          yield* owner.api.runs.updateRun({ path: { id: run.id }, payload: { status: terminal } })
          yield* expectFailure(
            owner.api.runs.appendRunEvent({ path: { id: run.id }, payload: { kind: "agent_turn" } }),
            409,
            "run_ended"
          )
          expect(sequences((yield* listEvents(owner, run.id)).events)).toEqual([1])
        }
      })
    )

    it.effect("50 concurrent appends get sequences exactly 1..50, no gaps, no duplicates", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const run = yield* createRun(base, owner, { agent_id: "a", kind: "chat_session" })
        // All 50 in flight at once; each typed call succeeds only with the contract's 201.
        const appended = yield* Effect.forEach(
          Array.from({ length: 50 }, (_, i) => i),
          (i) =>
            owner.api.runs.appendRunEvent({
              path: { id: run.id },
              payload: { kind: "custom", label: `concurrent-${i}` }
            }),
          { concurrency: "unbounded" }
        )
        expect(appended).toHaveLength(50)
        expect(sequences(appended).sort((a, b) => a - b)).toEqual(range(1, 50))

        const listed = (yield* listEvents(owner, run.id, { limit: 200 })).events
        expect(sequences(listed)).toEqual(range(1, 50))
        // Each label went to exactly one event.
        expect(new Set(listed.map((event) => event.label)).size).toBe(50)
        // The next append continues the sequence.
        expect((yield* appendEvent(base, owner, run.id, { kind: "custom" })).sequence).toBe(51)
      })
    )
  })

  describe("GET /v1/runs/{id}/events", () => {
    it.effect("lists by sequence; limit default 50, clamped at 200, below minimum 400; cursor pages cover all", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const run = yield* createRun(base, owner, { agent_id: "a", kind: "job" })
        yield* appendMany(base, owner, run.id, 205)

        const byDefault = yield* listEvents(owner, run.id)
        expect(sequences(byDefault.events)).toEqual(range(1, 50))
        expect(typeof byDefault.next_cursor).toBe("string")

        const clamped = yield* listEvents(owner, run.id, { limit: 1000 })
        expect(sequences(clamped.events)).toEqual(range(1, 200))
        const tail = yield* listEvents(owner, run.id, {
          limit: 1000,
          ...(clamped.next_cursor === undefined ? {} : { cursor: clamped.next_cursor })
        })
        expect(sequences(tail.events)).toEqual(range(201, 205))
        expect(tail.next_cursor).toBeUndefined()

        for (const limit of ["-1", "x"]) {
          expectValidation(
            yield* call(base, "GET", `/v1/runs/${run.id}/events?limit=${limit}`, { token: owner.jwt }),
            "limit"
          )
        }

        const pages = yield* allPages("events", (cursor) => listEvents(owner, run.id, { limit: 30, ...cursor }))
        expect(pages).toHaveLength(7)
        expect(sequences(pages.flat())).toEqual(range(1, 205))

        // The run detail shows the events in order too.
        expect(sequences((yield* getRun(base, owner, run.id)).events)).toEqual(range(1, 200))
      })
    )

    it.effect("a cursor that is not from this list is 400, never a 500", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const run = yield* createRun(base, owner, { agent_id: "a", kind: "job" })
        yield* appendMany(base, owner, run.id, 3)
        for (const cursor of [
          "garbage",
          forgedCursor('["x"]'),
          forgedCursor('["-1"]'),
          forgedCursor('["99999999999999999999"]'),
          forgedCursor('["1", "2"]')
        ]) {
          yield* expectFailure(listEvents(owner, run.id, { cursor }), 400)
        }
      })
    )
  })
})
