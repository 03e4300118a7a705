/**
 * Runs over HTTP against the real service and PostgreSQL: create (201,
 * default status running, warming allowed, terminal status or unknown kind
 * refused), list with every filter, the limit cap and cursor paging, the
 * run detail, status transitions with their timestamps (409 from a terminal
 * run), updatable fields, and 404 for unknown or other workspaces' runs.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import {
  call,
  createEnvironment,
  createKey,
  expectError,
  expectStatus,
  expectValidation,
  SERVER_OPTIONS,
  tenant,
  type Tenant,
  TIMESTAMP
} from "../identity/http-helpers.js"
import { baseUrl, testServer } from "../support/TestServer.js"
import {
  allPages,
  appendEvent,
  createRun,
  expectNot5xx,
  forgedCursor,
  getRun,
  list,
  propose,
  reply,
  RUN_KEYS,
  type RunBody
} from "../authorization-http/event-helpers.js"

const patchRun = (base: string, owner: Tenant, id: string, body: Record<string, unknown>) =>
  call(base, "PATCH", `/v1/runs/${encodeURIComponent(id)}`, { token: owner.jwt, body })

const listRuns = (base: string, owner: Tenant, query: Record<string, string | number | undefined> = {}) =>
  list<RunBody>(base, owner, "/v1/runs", "runs", query)

/** Creates `count` runs, `parallel` at a time. */
const createRuns = (base: string, owner: Tenant, count: number, body: (i: number) => Record<string, unknown>) =>
  Effect.forEach(
    Array.from({ length: count }, (_, i) => i),
    (i) => createRun(base, owner, body(i)),
    { concurrency: 8 }
  )

const idsOf = (runs: ReadonlyArray<{ id: string }>) => runs.map((run) => run.id)

layer(testServer("database"), SERVER_OPTIONS)("runs (database event log)", (it) => {
  describe("POST /v1/runs", () => {
    it.effect("creates a running run in the default environment (201) with zero counters", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const response = yield* call(base, "POST", "/v1/runs", {
          token: owner.jwt,
          body: { agent_id: "support-bot", kind: "chat_session" }
        })
        const run = expectStatus(response, 201) as RunBody
        expect(Object.keys(run).sort()).toEqual(RUN_KEYS)
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
        for (const kind of ["chat_session", "live_call", "workflow", "job", "other"]) {
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
        expect((yield* listRuns(base, owner)).items).toHaveLength(5)
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
        for (const status of ["completed", "failed", "canceled", "paused"]) {
          expectValidation(
            yield* call(base, "POST", "/v1/runs", { token: owner.jwt, body: { agent_id: "a", kind: "job", status } }),
            "status"
          )
        }
        expect((yield* listRuns(base, owner)).items).toHaveLength(2)
      })
    )

    it.effect("environment_id picks the environment; unknown or another workspace's is 404; a key uses its own", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const stranger = yield* tenant(base)
        const staging = yield* createEnvironment(base, owner)
        const run = yield* createRun(base, owner, { agent_id: "a", kind: "job", environment_id: staging.id })
        expect(run.environment_id).toBe(staging.id)
        expect(run.environment).toBe(staging.slug)
        for (const environment_id of ["env_nope", stranger.defaultEnvironmentId]) {
          expectError(
            yield* call(base, "POST", "/v1/runs", {
              token: owner.jwt,
              body: { agent_id: "a", kind: "job", environment_id }
            }),
            404
          )
        }
        const key = yield* createKey(base, owner, { environment_id: staging.id })
        const byKey = expectStatus(
          yield* call(base, "POST", "/v1/runs", { token: key.plaintext_key, body: { agent_id: "a", kind: "job" } }),
          201
        ) as RunBody
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
        expectStatus(yield* patchRun(base, owner, b2.id, { status: "completed" }), 200)

        expect(idsOf((yield* listRuns(base, owner)).items)).toEqual([b2.id, b1.id, a2.id, a1.id])
        expect(idsOf((yield* listRuns(base, owner, { agent_id: "agent-a" })).items)).toEqual([a2.id, a1.id])
        expect(idsOf((yield* listRuns(base, owner, { agent_id: "agent-c" })).items)).toEqual([])
        expect(idsOf((yield* listRuns(base, owner, { status: "running" })).items)).toEqual([b1.id, a1.id])
        expect(idsOf((yield* listRuns(base, owner, { status: "warming" })).items)).toEqual([a2.id])
        expect(idsOf((yield* listRuns(base, owner, { status: "completed" })).items)).toEqual([b2.id])
        expect(idsOf((yield* listRuns(base, owner, { kind: "chat_session" })).items)).toEqual([b1.id, a1.id])
        expect(idsOf((yield* listRuns(base, owner, { kind: "workflow" })).items)).toEqual([b2.id])
        expect(idsOf((yield* listRuns(base, owner, { external_id: "x-1" })).items)).toEqual([b1.id, a1.id])
        expect(
          idsOf((yield* listRuns(base, owner, { external_id: "x-1", agent_id: "agent-b", kind: "chat_session" })).items)
        ).toEqual([b1.id])
        expect(idsOf((yield* listRuns(base, owner, { agent_id: "agent-a", status: "completed" })).items)).toEqual([])

        for (const [name, value] of [
          ["status", "paused"],
          ["kind", "meeting"]
        ] as const) {
          expectValidation(yield* call(base, "GET", `/v1/runs?${name}=${value}`, { token: owner.jwt }), name)
        }
        // Another workspace lists none of these.
        const stranger = yield* tenant(base)
        expect((yield* listRuns(base, stranger)).items).toEqual([])
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

          const firstDefault = yield* listRuns(base, owner)
          expect(firstDefault.items).toHaveLength(50)
          expect(typeof firstDefault.next_cursor).toBe("string")

          const clamped = yield* listRuns(base, owner, { limit: 1000 })
          expect(clamped.items).toHaveLength(100)
          expect(typeof clamped.next_cursor).toBe("string")
          const rest = yield* listRuns(base, owner, { limit: 1000, cursor: clamped.next_cursor })
          expect(rest.items).toHaveLength(5)
          expect(rest.next_cursor).toBeUndefined()

          for (const limit of ["-1", "abc", "1.5"]) {
            expectValidation(yield* call(base, "GET", `/v1/runs?limit=${limit}`, { token: owner.jwt }), "limit")
          }

          const pages = yield* allPages<RunBody>(base, owner, "/v1/runs", "runs", { limit: 7 })
          expect(pages).toHaveLength(15)
          for (const page of pages) expect(page.length).toBeLessThanOrEqual(7)
          const seen = pages.flat().map((run) => run.id)
          expect(new Set(seen).size).toBe(seen.length)
          expect([...seen].sort()).toEqual(idsOf(created).sort())
          // Newest first across pages.
          const times = pages.flat().map((run) => run.created_at)
          expect([...times].sort().reverse()).toEqual(times)

          // Paging composes with filters.
          const filtered = yield* allPages<RunBody>(base, owner, "/v1/runs", "runs", { limit: 2, external_id: "e-7" })
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
          forgedCursor('["99999-99-99", "run_x"]')
        ]) {
          const response = yield* call(base, "GET", `/v1/runs?cursor=${encodeURIComponent(cursor)}`, {
            token: owner.jwt
          })
          expectNot5xx(response)
          expectError(response, 400)
        }
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

        const detail = yield* getRun(base, owner, run.id)
        expect(Object.keys(detail).sort()).toEqual([
          "budget_decision",
          "events",
          "guardrail_usage",
          "provider_usage",
          "run",
          "traces"
        ])
        expect(detail.run.id).toBe(run.id)
        expect(Object.keys(detail.run).sort()).toEqual(RUN_KEYS)
        expect(detail.events.map((event) => [event.id, event.sequence])).toEqual([
          [first.id, 1],
          [second.id, 2]
        ])
        expect(detail.traces.map((trace) => [trace.trace_id, trace.run_id, trace.run_event_id])).toEqual([
          [decision.trace_id, run.id, second.id]
        ])
        expect(detail.guardrail_usage).toEqual([])
        expect(detail).toHaveProperty("budget_decision")
        expect(detail).toHaveProperty("provider_usage")
      })
    )

    it.effect("an unknown run, or another workspace's, is 404 on every run route", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const stranger = yield* tenant(base)
        const theirs = yield* createRun(base, stranger, { agent_id: "a", kind: "job" })
        for (const id of ["run_does_not_exist", theirs.id]) {
          const attempts: ReadonlyArray<readonly [string, string, unknown?]> = [
            ["GET", `/v1/runs/${id}`],
            ["PATCH", `/v1/runs/${id}`, { status: "completed" }],
            ["GET", `/v1/runs/${id}/events`],
            ["POST", `/v1/runs/${id}/events`, { kind: "user_turn" }],
            ["GET", `/v1/runs/${id}/traces`]
          ]
          for (const [method, path, body] of attempts) {
            expectError(yield* call(base, method, path, { token: owner.jwt, body }), 404, "run_not_found")
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
        const running = expectStatus(yield* patchRun(base, owner, run.id, { status: "running" }), 200) as RunBody
        expect(running.status).toBe("running")
        expect(running.started_at).toMatch(TIMESTAMP)
        expect(running.ended_at).toBeNull()
        expect(Date.parse(running.started_at!)).toBeGreaterThanOrEqual(Date.parse(run.created_at))
        expect(Date.parse(running.updated_at)).toBeGreaterThanOrEqual(Date.parse(run.updated_at))

        const completed = expectStatus(yield* patchRun(base, owner, run.id, { status: "completed" }), 200) as RunBody
        expect(completed.status).toBe("completed")
        expect(completed.started_at).toBe(running.started_at)
        expect(completed.ended_at).toMatch(TIMESTAMP)
        expect(Date.parse(completed.ended_at!)).toBeGreaterThanOrEqual(Date.parse(running.started_at!))
        expect((yield* getRun(base, owner, run.id)).run).toEqual(completed)

        for (const terminal of ["failed", "canceled"]) {
          const other = yield* createRun(base, owner, { agent_id: "a", kind: "job" })
          const ended = expectStatus(yield* patchRun(base, owner, other.id, { status: terminal }), 200) as RunBody
          expect(ended.status).toBe(terminal)
          expect(ended.ended_at).toMatch(TIMESTAMP)
        }
      })
    )

    it.effect("a terminal run moves no more (409 invalid_transition); running -> warming is 409 too", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        for (const terminal of ["completed", "failed", "canceled"]) {
          const run = yield* createRun(base, owner, { agent_id: "a", kind: "job" })
          const ended = expectStatus(yield* patchRun(base, owner, run.id, { status: terminal }), 200) as RunBody
          for (const next of ["warming", "running", "completed", "failed", "canceled"].filter((s) => s !== terminal)) {
            expectError(yield* patchRun(base, owner, run.id, { status: next }), 409, "invalid_transition")
          }
          const after = (yield* getRun(base, owner, run.id)).run
          expect(after.status).toBe(terminal)
          expect(after.ended_at).toBe(ended.ended_at)
        }
        const running = yield* createRun(base, owner, { agent_id: "a", kind: "job" })
        expectError(yield* patchRun(base, owner, running.id, { status: "warming" }), 409, "invalid_transition")
        expectValidation(yield* patchRun(base, owner, running.id, { status: "paused" }), "status")
      })
    )

    it.effect("metadata and external_id are updatable; an empty object is accepted and changes nothing", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const run = yield* createRun(base, owner, { agent_id: "a", kind: "job", metadata: { v: 1 } })

        const unchanged = expectStatus(yield* patchRun(base, owner, run.id, {}), 200) as RunBody
        expect(unchanged).toEqual(run)

        const updated = expectStatus(
          yield* patchRun(base, owner, run.id, { metadata: { v: 2, nested: [1, { a: null }] }, external_id: "ext-9" }),
          200
        ) as RunBody
        expect(updated.metadata).toEqual({ v: 2, nested: [1, { a: null }] })
        expect(updated.external_id).toBe("ext-9")
        expect(updated.status).toBe("running")
        expect(updated.kind).toBe("job")
        expect(idsOf((yield* listRuns(base, owner, { external_id: "ext-9" })).items)).toEqual([run.id])

        const cleared = expectStatus(yield* patchRun(base, owner, run.id, { external_id: null }), 200) as RunBody
        expect(cleared.external_id).toBeNull()
        expect(cleared.metadata).toEqual({ v: 2, nested: [1, { a: null }] })
        expect((yield* getRun(base, owner, run.id)).run).toEqual(cleared)

        expectValidation(yield* patchRun(base, owner, run.id, { external_id: 5 }), "external_id")
      })
    )
  })
})
