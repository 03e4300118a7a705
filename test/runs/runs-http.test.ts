/**
 * Runs over HTTP against the real service and PostgreSQL: create (201,
 * default status running, warming allowed, terminal status or unknown kind
 * refused), list with every filter, the limit cap and cursor paging, the
 * run detail, status transitions with their timestamps (409 from a terminal
 * run), updatable fields, and 404 for unknown or other workspaces' runs.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { RunId } from "../../src/runs/Domain.js"
import { TIMESTAMP } from "../support/Formats.js"
import { expectFailure, expectInvalid, jsonAt, keysOf, withRaw } from "../support/Api.js"
import { call, expectValidation } from "../support/Raw.js"
import { createEnvironment, createKey, keyClient, tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import {
  allPages,
  appendEvent,
  createRuns,
  forgedCursor,
  getRun,
  idsOf,
  listRuns,
  patchRun,
  patchRunRaw,
  RUN_KEYS
} from "./runs-helpers.js"
import { createRun, propose, reply } from "../support/Events.js"

layer(testServer("database"), SERVER_OPTIONS)("runs (database event log)", (it) => {
  describe("POST /v1/runs", () => {
    it.effect("creates a running run in the default environment (201) with zero counters", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const { body, value: run } = yield* withRaw(
          owner.api.runs.createRun({ payload: { agent_id: "support-bot", kind: "chat_session" }, withResponse: true })
        )
        expect(keysOf(body)).toEqual(RUN_KEYS)
        expect(run).toMatchObject({
          agent_id: "support-bot",
          workspace_id: owner.workspaceId,
          environment_id: owner.defaultEnvironmentId,
          external_id: null,
          kind: "chat_session",
          status: "running",
          blocked_count: 0,
          escalated_count: 0,
          rewritten_count: 0,
          trace_count: 0,
          p95_latency_ms: 0,
          metadata: null,
          ended_at: null
        })
        expect(run.id).toMatch(/^\S+$/)
        expect(typeof run.environment).toBe("string")
        expect(run.created_at).toMatch(TIMESTAMP)
        expect(run.updated_at).toMatch(TIMESTAMP)
        expect(run.started_at).toMatch(TIMESTAMP)

        const full = yield* createRun(base, owner, {
          agent_id: "support-bot",
          kind: "workflow",
          external_id: "crm-42",
          metadata: { channel: "web", tags: ["vip"], depth: { n: 1 } }
        })
        expect(full.external_id).toBe("crm-42")
        expect(full.metadata).toEqual({ channel: "web", tags: ["vip"], depth: { n: 1 } })
        expect(full.id).not.toBe(run.id)
      })
    )

    it.effect("every kind is accepted; an unknown or missing kind is 400 naming kind", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        for (const kind of ["chat_session", "live_call", "workflow", "job", "other"] as const) {
          expect((yield* createRun(base, owner, { agent_id: "a", kind })).kind).toBe(kind)
        }
        for (const kind of ["meeting", "CHAT_SESSION", "", 3, null]) {
          expectValidation(
            yield* call(base, "POST", "/v1/runs", { token: owner.jwt, body: { agent_id: "a", kind } }),
            "kind"
          )
        }
        expectValidation(yield* call(base, "POST", "/v1/runs", { token: owner.jwt, body: { agent_id: "a" } }), "kind")
        expectValidation(yield* call(base, "POST", "/v1/runs", { token: owner.jwt, body: { kind: "job" } }), "agent_id")
        expect((yield* listRuns(owner)).runs).toHaveLength(5)
      })
    )

    it.effect("warming is allowed (no started_at); a terminal or unknown status at creation is 400", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const warming = yield* createRun(base, owner, { agent_id: "a", kind: "live_call", status: "warming" })
        expect(warming.status).toBe("warming")
        expect(warming.started_at).toBeNull()
        const running = yield* createRun(base, owner, { agent_id: "a", kind: "live_call", status: "running" })
        expect(running.started_at).toMatch(TIMESTAMP)
        // Terminal statuses are in the contract's enum but refused at creation; "paused" is outside it (sent raw).
        for (const status of ["completed", "failed", "canceled"] as const) {
          yield* expectInvalid(owner.api.runs.createRun({ payload: { agent_id: "a", kind: "job", status } }), "status")
        }
        expectValidation(
          yield* call(base, "POST", "/v1/runs", {
            token: owner.jwt,
            body: { agent_id: "a", kind: "job", status: "paused" }
          }),
          "status"
        )
        expect((yield* listRuns(owner)).runs).toHaveLength(2)
      })
    )

    it.effect("environment_id picks the environment; unknown or another workspace's is 404; a key uses its own", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const stranger = yield* tenant(base)
        const staging = yield* createEnvironment(owner)
        const run = yield* createRun(base, owner, { agent_id: "a", kind: "job", environment_id: staging.id })
        expect(run.environment_id).toBe(staging.id)
        expect(run.environment).toBe(staging.slug)
        for (const environment_id of ["env_nope", stranger.defaultEnvironmentId]) {
          yield* expectFailure(
            owner.api.runs.createRun({ payload: { agent_id: "a", kind: "job", environment_id } }),
            404
          )
        }
        const key = yield* createKey(owner, { environment_id: staging.id })
        const byKey = yield* (yield* keyClient(base, key)).runs.createRun({ payload: { agent_id: "a", kind: "job" } })
        expect(byKey.environment_id).toBe(staging.id)
        expect(byKey.workspace_id).toBe(owner.workspaceId)
      })
    )
  })

  describe("GET /v1/runs", () => {
    it.effect("filters by agent_id, status, kind and external_id (alone and combined), newest first", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const a1 = yield* createRun(base, owner, { agent_id: "agent-a", kind: "chat_session", external_id: "x-1" })
        const a2 = yield* createRun(base, owner, { agent_id: "agent-a", kind: "job", status: "warming" })
        const b1 = yield* createRun(base, owner, { agent_id: "agent-b", kind: "chat_session", external_id: "x-1" })
        const b2 = yield* createRun(base, owner, { agent_id: "agent-b", kind: "workflow", external_id: "x-2" })
        yield* patchRun(owner, b2.id, { status: "completed" })

        expect(idsOf((yield* listRuns(owner)).runs)).toEqual([b2.id, b1.id, a2.id, a1.id])
        expect(idsOf((yield* listRuns(owner, { agent_id: "agent-a" })).runs)).toEqual([a2.id, a1.id])
        expect(idsOf((yield* listRuns(owner, { agent_id: "agent-c" })).runs)).toEqual([])
        expect(idsOf((yield* listRuns(owner, { status: "running" })).runs)).toEqual([b1.id, a1.id])
        expect(idsOf((yield* listRuns(owner, { status: "warming" })).runs)).toEqual([a2.id])
        expect(idsOf((yield* listRuns(owner, { status: "completed" })).runs)).toEqual([b2.id])
        expect(idsOf((yield* listRuns(owner, { kind: "chat_session" })).runs)).toEqual([b1.id, a1.id])
        expect(idsOf((yield* listRuns(owner, { kind: "workflow" })).runs)).toEqual([b2.id])
        expect(idsOf((yield* listRuns(owner, { external_id: "x-1" })).runs)).toEqual([b1.id, a1.id])
        expect(
          idsOf((yield* listRuns(owner, { external_id: "x-1", agent_id: "agent-b", kind: "chat_session" })).runs)
        ).toEqual([b1.id])
        expect(idsOf((yield* listRuns(owner, { agent_id: "agent-a", status: "completed" })).runs)).toEqual([])

        for (const [name, value] of [
          ["status", "paused"],
          ["kind", "meeting"]
        ] as const) {
          expectValidation(yield* call(base, "GET", `/v1/runs?${name}=${value}`, { token: owner.jwt }), name)
        }
        // Another workspace lists none of these.
        const stranger = yield* tenant(base)
        expect((yield* listRuns(stranger)).runs).toEqual([])
      })
    )

    it.effect(
      "limit: default 50, above 100 clamped to 100, below the minimum 400; cursor pages are disjoint and complete",
      () =>
        Effect.gen(function* () {
          const base = yield* baseUrl
          const owner = yield* tenant(base)
          const created = yield* createRuns(base, owner, 105, (i) => ({
            agent_id: "bulk",
            kind: "job",
            external_id: `e-${i}`
          }))

          const firstDefault = yield* listRuns(owner)
          expect(firstDefault.runs).toHaveLength(50)
          expect(typeof firstDefault.next_cursor).toBe("string")

          const clamped = yield* listRuns(owner, { limit: 1000 })
          expect(clamped.runs).toHaveLength(100)
          expect(typeof clamped.next_cursor).toBe("string")
          const rest = yield* listRuns(owner, {
            limit: 1000,
            ...(clamped.next_cursor === undefined ? {} : { cursor: clamped.next_cursor })
          })
          expect(rest.runs).toHaveLength(5)
          expect(rest.next_cursor).toBeUndefined()

          for (const limit of ["0", "-1", "abc", "1.5"]) {
            expectValidation(yield* call(base, "GET", `/v1/runs?limit=${limit}`, { token: owner.jwt }), "limit")
          }

          const pages = yield* allPages("runs", (cursor) => listRuns(owner, { limit: 7, ...cursor }))
          expect(pages).toHaveLength(15)
          for (const page of pages) expect(page.length).toBeLessThanOrEqual(7)
          const seen = pages.flat().map((run) => run.id)
          expect(new Set(seen).size).toBe(seen.length)
          expect([...seen].sort()).toEqual(idsOf(created).sort())
          // Newest first across pages.
          const times = pages.flat().map((run) => run.created_at)
          expect([...times].sort().reverse()).toEqual(times)

          // Paging composes with filters.
          const filtered = yield* allPages("runs", (cursor) =>
            listRuns(owner, { limit: 2, external_id: "e-7", ...cursor })
          )
          expect(filtered.flat().map((run) => run.external_id)).toEqual(["e-7"])
        })
    )

    it.effect("a cursor that is not from this list is 400, never a 500", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        yield* createRuns(base, owner, 3, () => ({ agent_id: "a", kind: "job" }))
        for (const cursor of [
          "garbage",
          forgedCursor("[]"),
          forgedCursor('["not a time", "run_x"]'),
          forgedCursor('["2026-01-01T00:00:00.000Z"]'),
          forgedCursor('["99999-99-99", "run_x"]'), // and two timestamps naming no instant (PostgreSQL refuses them):
          ...["2026-02-30", "0000-01-01"].map((day) => forgedCursor(`["${day}T00:00:00.000Z", "run_x"]`))
        ]) {
          yield* expectFailure(listRuns(owner, { cursor }), 400)
        }
        // A NUL character in its id: the database refuses it, so the cursor is refused by name first.
        const nul = forgedCursor('["2026-01-01T00:00:00.000Z", "run_\\u0000x"]')
        const refused = yield* expectFailure(listRuns(owner, { cursor: nul }), 400, "validation_failed")
        expect(refused.details?.map((detail) => detail.path)).toEqual(["cursor"])
      })
    )
  })

  describe("GET /v1/runs/{id}", () => {
    it.effect("answers the run with its events, traces, empty guardrail usage and the budget and provider fields", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const run = yield* createRun(base, owner, { agent_id: "support-bot", kind: "chat_session" })
        const first = yield* appendEvent(base, owner, run.id, { kind: "user_turn", input_summary: "hi" })
        const second = yield* appendEvent(base, owner, run.id, { kind: "agent_turn", output_summary: "hello" })
        const decision = yield* propose(base, owner, "support-bot", reply("hello"), {
          run_id: run.id,
          run_event_id: second.id
        })

        const { body, value: detail } = yield* withRaw(
          owner.api.runs.getRun({ path: { id: run.id }, withResponse: true })
        )
        expect(keysOf(body)).toEqual([
          "budget_decision",
          "events",
          "guardrail_usage",
          "provider_usage",
          "run",
          "traces"
        ])
        expect(detail.run.id).toBe(run.id)
        expect(keysOf(jsonAt(body, "run"))).toEqual(RUN_KEYS)
        expect(detail.events.map((event) => [event.id, event.sequence])).toEqual([
          [first.id, 1],
          [second.id, 2]
        ])
        expect(detail.traces.map((trace) => [trace.trace_id, trace.run_id, trace.run_event_id])).toEqual([
          [decision.trace_id, run.id, second.id]
        ])
        expect(detail.guardrail_usage).toEqual([])
        expect(body).toHaveProperty("budget_decision")
        expect(body).toHaveProperty("provider_usage")
      })
    )

    it.effect("an unknown run, or another workspace's, is 404 on every run route", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const stranger = yield* tenant(base)
        const theirs = yield* createRun(base, stranger, { agent_id: "a", kind: "job" })
        for (const id of [RunId.make("run_does_not_exist"), theirs.id]) {
          const path = { id }
          const runs = owner.api.runs
          const attempts: ReadonlyArray<readonly [string, Effect.Effect<unknown, unknown>]> = [
            ["GET /v1/runs/{id}", runs.getRun({ path })],
            ["PATCH /v1/runs/{id}", runs.updateRun({ path, payload: { status: "completed" } })],
            ["GET /v1/runs/{id}/events", runs.listRunEvents({ path, urlParams: {} })],
            ["POST /v1/runs/{id}/events", runs.appendRunEvent({ path, payload: { kind: "user_turn" } })],
            ["GET /v1/runs/{id}/traces", runs.listRunTraces({ path, urlParams: {} })]
          ]
          for (const [route, attempt] of attempts) {
            const error = yield* expectFailure(attempt, 404, "run_not_found")
            expect(error.code, route).toBe("run_not_found")
          }
        }
        // Nothing changed in the other workspace.
        const detail = yield* getRun(base, stranger, theirs.id)
        expect(detail.run.status).toBe("running")
        expect(detail.events).toEqual([])
      })
    )
  })

  describe("PATCH /v1/runs/{id}", () => {
    it.effect("warming -> running sets started_at; running -> completed sets ended_at", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const run = yield* createRun(base, owner, { agent_id: "a", kind: "live_call", status: "warming" })
        const running = yield* patchRun(owner, run.id, { status: "running" })
        expect(running.status).toBe("running")
        expect(running.started_at).toMatch(TIMESTAMP)
        expect(running.ended_at).toBeNull()
        expect(Date.parse(running.started_at!)).toBeGreaterThanOrEqual(Date.parse(run.created_at))
        expect(Date.parse(running.updated_at)).toBeGreaterThanOrEqual(Date.parse(run.updated_at))

        const completed = yield* patchRun(owner, run.id, { status: "completed" })
        expect(completed.status).toBe("completed")
        expect(completed.started_at).toBe(running.started_at)
        expect(completed.ended_at).toMatch(TIMESTAMP)
        expect(Date.parse(completed.ended_at!)).toBeGreaterThanOrEqual(Date.parse(running.started_at!))
        expect((yield* getRun(base, owner, run.id)).run).toEqual(completed)

        for (const terminal of ["failed", "canceled"] as const) {
          const other = yield* createRun(base, owner, { agent_id: "a", kind: "job" })
          const ended = yield* patchRun(owner, other.id, { status: terminal })
          expect(ended.status).toBe(terminal)
          expect(ended.ended_at).toMatch(TIMESTAMP)
        }
      })
    )

    it.effect("a terminal run moves no more (409 invalid_transition); running -> warming is 409 too", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        for (const terminal of ["completed", "failed", "canceled"] as const) {
          const run = yield* createRun(base, owner, { agent_id: "a", kind: "job" })
          const ended = yield* patchRun(owner, run.id, { status: terminal })
          const others = (["warming", "running", "completed", "failed", "canceled"] as const).filter(
            (s) => s !== terminal
          )
          for (const next of others) {
            yield* expectFailure(patchRun(owner, run.id, { status: next }), 409, "invalid_transition")
          }
          const after = (yield* getRun(base, owner, run.id)).run
          expect(after.status).toBe(terminal)
          expect(after.ended_at).toBe(ended.ended_at)
        }
        const running = yield* createRun(base, owner, { agent_id: "a", kind: "job" })
        yield* expectFailure(patchRun(owner, running.id, { status: "warming" }), 409, "invalid_transition")
        expectValidation(yield* patchRunRaw(base, owner, running.id, { status: "paused" }), "status")
      })
    )

    it.effect("metadata and external_id are updatable; an empty object is accepted and changes nothing", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const run = yield* createRun(base, owner, { agent_id: "a", kind: "job", metadata: { v: 1 } })

        const unchanged = yield* patchRun(owner, run.id, {})
        expect(unchanged).toEqual(run)

        const updated = yield* patchRun(owner, run.id, {
          metadata: { v: 2, nested: [1, { a: null }] },
          external_id: "ext-9"
        })
        expect(updated.metadata).toEqual({ v: 2, nested: [1, { a: null }] })
        expect(updated.external_id).toBe("ext-9")
        expect(updated.status).toBe("running")
        expect(updated.kind).toBe("job")
        expect(idsOf((yield* listRuns(owner, { external_id: "ext-9" })).runs)).toEqual([run.id])

        const cleared = yield* patchRun(owner, run.id, { external_id: null })
        expect(cleared.external_id).toBeNull()
        expect(cleared.metadata).toEqual({ v: 2, nested: [1, { a: null }] })
        expect((yield* getRun(base, owner, run.id)).run).toEqual(cleared)

        expectValidation(yield* patchRunRaw(base, owner, run.id, { external_id: 5 }), "external_id")
      })
    )
  })
})
