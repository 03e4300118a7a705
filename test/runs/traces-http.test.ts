/**
 * Decision traces over HTTP against the real service and PostgreSQL: every
 * `POST /v1/events` writes exactly one trace, readable with `GET /v1/traces`
 * (filters session_id, agent_id, effect, run_id; limit default 50, clamped
 * at 100, below the minimum 400; cursor pages disjoint and complete) and
 * under its run (`GET /v1/runs/{id}/traces`), carrying run_id and
 * run_event_id when the event passed them.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { TIMESTAMP } from "../support/Formats.js"
import { expectFailure, jsonAt, keysOf, withRaw } from "../support/Api.js"
import { call, expectError, expectValidation } from "../support/Raw.js"
import { tenant, type Tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import { allPages, appendEvent, type CursorParams, forgedCursor, TRACE_KEYS } from "./runs-helpers.js"
import { createAgent, createRun, type Decision, propose, proposeCall, reply } from "../support/Events.js"

const AGENT = "support-bot"

type TraceQuery = {
  readonly session_id?: string
  readonly agent_id?: string
  readonly run_id?: string
  readonly effect?: "permit" | "deny" | "defer" | "rewrite"
  readonly limit?: number
} & CursorParams

const listTraces = (owner: Tenant, query: TraceQuery = {}) => owner.api.traces.listTraces({ urlParams: query })

const traceIds = (traces: ReadonlyArray<{ trace_id: string }>) => traces.map((trace) => trace.trace_id)

/** `count` permitted decisions, `concurrency` at a time. */
const decideMany = (base: string, owner: Tenant, count: number, concurrency = 8) =>
  Effect.forEach(
    Array.from({ length: count }, (_, i) => i),
    (i) => propose(base, owner, AGENT, reply(`message ${i}`), { session_id: `bulk-${i % 3}` }),
    { concurrency }
  )

layer(testServer("database"), SERVER_OPTIONS)("traces (database event log)", (it) => {
  describe("GET /v1/traces", () => {
    it.effect("every decision writes exactly one trace with its effect, environment and payload", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        yield* createAgent(base, owner, AGENT)
        expect((yield* listTraces(owner)).traces).toEqual([])

        const permit = yield* propose(base, owner, AGENT, reply("hello"), { metadata: { turn: 1 } })
        const deny = yield* propose(base, owner, AGENT, reply("I promise a full refund"))
        const defer = yield* propose(base, owner, AGENT, reply("call my lawyer"))
        const rewrite = yield* propose(base, owner, AGENT, reply("that is stupid"))
        const decisions = [rewrite, defer, deny, permit]

        const {
          body,
          value: { traces }
        } = yield* withRaw(owner.api.traces.listTraces({ urlParams: {}, withResponse: true }))
        expect(traceIds(traces)).toEqual(traceIds(decisions))
        for (const [index, trace] of traces.entries()) {
          const decision = decisions[index]!
          expect(keysOf(jsonAt(body, "traces", index))).toEqual(TRACE_KEYS)
          expect(trace.decision).toBe(decision.effect)
          expect(trace.agent_id).toBe(AGENT)
          expect(trace.domain).toBe(decision.domain)
          expect(trace.elapsed_ms).toBe(decision.latency_ms)
          expect(trace.environment_id).toBe(owner.defaultEnvironmentId)
          expect(typeof trace.environment).toBe("string")
          expect(trace.run_id).toBeNull()
          expect(trace.run_event_id).toBeNull()
          expect(trace.session_id).toBeNull()
          expect(trace.latest_review_outcome).toBeNull()
          expect(trace.latest_reviewed_at).toBeNull()
          expect(trace.created_at).toMatch(TIMESTAMP)
          expect(jsonAt(trace.payload, "response", "trace_id")).toBe(decision.trace_id)
          expect(jsonAt(trace.payload, "response", "effect")).toBe(decision.effect)
          expect(jsonAt(trace.payload, "request", "action", "content")).toBeDefined()
        }
        expect(jsonAt(traces[3]!.payload, "request", "metadata")).toEqual({ turn: 1 })

        // A refused request (400/404) writes no trace.
        expectError(yield* call(base, "POST", "/v1/events", { token: owner.jwt, body: { kind: "nope" } }), 400)
        yield* expectFailure(proposeCall(base, owner, AGENT, reply("x"), { environment_id: "env_nope" }), 404)
        expect((yield* listTraces(owner)).traces).toHaveLength(4)
        // Another workspace sees none of them.
        expect((yield* listTraces(yield* tenant(base))).traces).toEqual([])
      })
    )

    it.effect("filters by session_id, agent_id, effect and run_id, alone and combined", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        yield* createAgent(base, owner, AGENT)
        const run = yield* createRun(base, owner, { agent_id: AGENT, kind: "chat_session" })
        const s1Permit = yield* propose(base, owner, AGENT, reply("hi"), { session_id: "s-1" })
        const s1Deny = yield* propose(base, owner, AGENT, reply("a full refund"), { session_id: "s-1", run_id: run.id })
        const s2Permit = yield* propose(base, owner, "other-bot", reply("a full refund"), { session_id: "s-2" })
        const noSession = yield* propose(base, owner, AGENT, reply("hello"), { run_id: run.id })

        const ids = (query: TraceQuery) => Effect.map(listTraces(owner, query), (page) => traceIds(page.traces))
        expect(yield* ids({ session_id: "s-1" })).toEqual(traceIds([s1Deny, s1Permit]))
        expect(yield* ids({ session_id: "s-2" })).toEqual(traceIds([s2Permit]))
        expect(yield* ids({ session_id: "s-3" })).toEqual([])
        expect(yield* ids({ agent_id: AGENT })).toEqual(traceIds([noSession, s1Deny, s1Permit]))
        expect(yield* ids({ agent_id: "other-bot" })).toEqual(traceIds([s2Permit]))
        // Each trace names the agent it decided for.
        const agents = Effect.map(listTraces(owner, { session_id: "s-2" }), (page) => page.traces.map((t) => t.agent_id))
        expect(yield* agents).toEqual(["other-bot"])
        expect(yield* ids({ effect: "deny" })).toEqual(traceIds([s1Deny]))
        expect(yield* ids({ effect: "permit" })).toEqual(traceIds([noSession, s2Permit, s1Permit]))
        expect(yield* ids({ effect: "rewrite" })).toEqual([])
        expect(yield* ids({ run_id: run.id })).toEqual(traceIds([noSession, s1Deny]))
        expect(yield* ids({ run_id: run.id, effect: "permit" })).toEqual(traceIds([noSession]))
        expect(yield* ids({ session_id: "s-1", agent_id: AGENT, effect: "permit" })).toEqual(traceIds([s1Permit]))

        expectValidation(yield* call(base, "GET", "/v1/traces?effect=allow", { token: owner.jwt }), "effect")
      })
    )

    it.effect(
      "limit: default 50, above 100 clamped to 100, below the minimum 400; cursor pages disjoint and complete",
      () =>
        Effect.gen(function* () {
          const base = yield* baseUrl
          const owner = yield* tenant(base)
          yield* createAgent(base, owner, AGENT)
          const decisions: ReadonlyArray<Decision> = yield* decideMany(base, owner, 105)

          const byDefault = yield* listTraces(owner)
          expect(byDefault.traces).toHaveLength(50)
          expect(typeof byDefault.next_cursor).toBe("string")

          const clamped = yield* listTraces(owner, { limit: 1000 })
          expect(clamped.traces.length).toBeLessThanOrEqual(100)
          expect(clamped.traces).toHaveLength(100)
          expect(typeof clamped.next_cursor).toBe("string")

          for (const limit of ["-1", "abc", "2.5"]) {
            expectValidation(yield* call(base, "GET", `/v1/traces?limit=${limit}`, { token: owner.jwt }), "limit")
          }

          const pages = yield* allPages("traces", (cursor) => listTraces(owner, { limit: 9, ...cursor }))
          expect(pages).toHaveLength(12)
          const seen = traceIds(pages.flat())
          expect(new Set(seen).size).toBe(seen.length)
          expect([...seen].sort()).toEqual(traceIds(decisions).sort())
          const times = pages.flat().map((trace) => trace.created_at)
          expect([...times].sort().reverse()).toEqual(times)

          // Paging composes with a filter.
          const session = yield* allPages("traces", (cursor) =>
            listTraces(owner, { limit: 4, session_id: "bulk-1", ...cursor })
          )
          expect(session.flat()).toHaveLength(35)
          expect(new Set(session.flat().map((trace) => trace.session_id))).toEqual(new Set(["bulk-1"]))
        })
    )

    it.effect("a cursor that is not from this list is 400, never a 500 and never a silent first page", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        yield* decideMany(base, owner, 3)
        for (const cursor of [
          "garbage",
          forgedCursor("1|trc_x"),
          forgedCursor("not a time|trc_x"),
          forgedCursor("|")
        ]) {
          yield* expectFailure(listTraces(owner, { cursor }), 400)
        }
      })
    )
  })

  describe("GET /v1/runs/{id}/traces", () => {
    it.effect("lists the run's traces (carrying run_id and run_event_id), with the same limit cap and paging", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        yield* createAgent(base, owner, AGENT)
        const run = yield* createRun(base, owner, { agent_id: AGENT, kind: "chat_session" })
        const other = yield* createRun(base, owner, { agent_id: AGENT, kind: "chat_session" })
        const turn = yield* appendEvent(base, owner, run.id, { kind: "agent_turn" })

        const tied = yield* propose(base, owner, AGENT, reply("I promise a full refund"), {
          run_id: run.id,
          run_event_id: turn.id,
          session_id: "s-9"
        })
        const runOnly = yield* propose(base, owner, AGENT, reply("hello"), { run_id: run.id })
        yield* propose(base, owner, AGENT, reply("hello"), { run_id: other.id })
        yield* propose(base, owner, AGENT, reply("hello"))

        const { traces } = yield* owner.api.runs.listRunTraces({ path: { id: run.id }, urlParams: {} })
        expect(traces.map((trace) => [trace.trace_id, trace.run_id, trace.run_event_id, trace.session_id])).toEqual([
          [runOnly.trace_id, run.id, null, null],
          [tied.trace_id, run.id, turn.id, "s-9"]
        ])
        expect(traces[1]!.decision).toBe("deny")

        // More than a page: clamped at 100, cursor pages cover all.
        yield* Effect.forEach(
          Array.from({ length: 101 }, (_, i) => i),
          (i) => propose(base, owner, AGENT, reply(`turn ${i}`), { run_id: other.id }),
          { concurrency: 8 }
        )
        const runTraces = (query: { readonly limit?: number } & CursorParams) =>
          owner.api.runs.listRunTraces({ path: { id: other.id }, urlParams: query })
        const clamped = yield* runTraces({ limit: 500 })
        expect(clamped.traces).toHaveLength(100)
        const pages = yield* allPages("traces", (cursor) => runTraces({ limit: 25, ...cursor }))
        const seen = traceIds(pages.flat())
        expect(seen).toHaveLength(102)
        expect(new Set(seen).size).toBe(102)
        expect(new Set(pages.flat().map((trace) => trace.run_id))).toEqual(new Set([other.id]))
        expectValidation(yield* call(base, "GET", `/v1/runs/${run.id}/traces?limit=-1`, { token: owner.jwt }), "limit")

        // The same traces under the run filter of /v1/traces.
        const filtered = yield* listTraces(owner, { run_id: run.id })
        expect(traceIds(filtered.traces)).toEqual(traceIds(traces))
      })
    )
  })
})
