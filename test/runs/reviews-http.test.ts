/**
 * Review events over HTTP against the real service and PostgreSQL: a human
 * records an outcome on a trace (201, reviewer = the caller), the outcome
 * enum is enforced, unknown or other workspaces' traces are 404, the list is
 * newest first with its limit cap and cursor, and the trace then shows its
 * latest outcome and when it was given.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import {
  call,
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
  createAgent,
  createRun,
  expectNot5xx,
  forgedCursor,
  getRun,
  list,
  propose,
  reply,
  type ReviewBody,
  type TraceBody
} from "../authorization-http/event-helpers.js"

const AGENT = "support-bot"
const OUTCOMES = ["accepted", "corrected", "false_positive", "ignored", "missed_issue", "rejected"]
const REVIEW_KEYS = [
  "created_at",
  "id",
  "metadata",
  "note",
  "outcome",
  "reason_codes",
  "reviewer_id",
  "run_event_id",
  "run_id",
  "trace_id",
  "workspace_id"
]

const review = (base: string, owner: { jwt: string }, traceId: string, body: unknown) =>
  call(base, "POST", `/v1/traces/${encodeURIComponent(traceId)}/review-events`, { token: owner.jwt, body })

const listReviews = (
  base: string,
  owner: Tenant,
  traceId: string,
  query: Record<string, string | number | undefined> = {}
) => list<ReviewBody>(base, owner, `/v1/traces/${traceId}/review-events`, "review_events", query)

const traceById = (base: string, owner: Tenant, traceId: string) =>
  Effect.map(list<TraceBody>(base, owner, "/v1/traces", "traces", { limit: 100 }), (page) => {
    const trace = page.items.find((item) => item.trace_id === traceId)
    expect(trace, `trace ${traceId} listed`).toBeDefined()
    return trace!
  })

layer(testServer("database"), SERVER_OPTIONS)("review events (database event log)", (it) => {
  describe("POST /v1/traces/{trace_id}/review-events", () => {
    it.effect("records the outcome (201) with the caller as reviewer and the trace's run ids", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        yield* createAgent(base, owner, AGENT)
        const run = yield* createRun(base, owner, { agent_id: AGENT, kind: "chat_session" })
        const turn = yield* appendEvent(base, owner, run.id, { kind: "agent_turn" })
        const decision = yield* propose(base, owner, AGENT, reply("I promise a full refund"), {
          run_id: run.id,
          run_event_id: turn.id
        })

        const response = yield* review(base, owner, decision.trace_id, {
          outcome: "accepted",
          reason_codes: ["policy_correct", "refund_promise"],
          note: "Right call.",
          metadata: { queue: "refunds", score: 0.9 }
        })
        const created = expectStatus(response, 201) as ReviewBody
        expect(Object.keys(created).sort()).toEqual(REVIEW_KEYS)
        expect(created).toMatchObject({
          trace_id: decision.trace_id,
          run_id: run.id,
          run_event_id: turn.id,
          workspace_id: owner.workspaceId,
          reviewer_id: owner.user_id,
          outcome: "accepted",
          reason_codes: ["policy_correct", "refund_promise"],
          note: "Right call.",
          metadata: { queue: "refunds", score: 0.9 }
        })
        expect(created.created_at).toMatch(TIMESTAMP)

        // Only the outcome is required; the reviewer cannot be set from the body.
        const minimal = expectStatus(
          yield* review(base, owner, decision.trace_id, { outcome: "false_positive", reviewer_id: "someone-else" }),
          201
        ) as ReviewBody
        expect(minimal.reviewer_id).toBe(owner.user_id)
        expect(minimal.reason_codes).toEqual([])
        expect(minimal.note).toBeNull()
        expect(minimal.id).not.toBe(created.id)

        // A trace without a run gets null run ids.
        const loose = yield* propose(base, owner, AGENT, reply("hello"))
        const looseReview = expectStatus(
          yield* review(base, owner, loose.trace_id, { outcome: "ignored" }),
          201
        ) as ReviewBody
        expect(looseReview.run_id).toBeNull()
        expect(looseReview.run_event_id).toBeNull()
      })
    )

    it.effect("every outcome of the enum is accepted; another or a missing outcome is 400", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const decision = yield* propose(base, owner, AGENT, reply("hello"))
        for (const outcome of OUTCOMES) {
          expect(
            (expectStatus(yield* review(base, owner, decision.trace_id, { outcome }), 201) as ReviewBody).outcome
          ).toBe(outcome)
        }
        for (const outcome of ["approved", "ACCEPTED", "", 1, null]) {
          expectValidation(yield* review(base, owner, decision.trace_id, { outcome }), "outcome")
        }
        expectValidation(yield* review(base, owner, decision.trace_id, {}), "outcome")
        expectValidation(
          yield* review(base, owner, decision.trace_id, { outcome: "accepted", reason_codes: "x" }),
          "reason_codes"
        )
        expect((yield* listReviews(base, owner, decision.trace_id)).items).toHaveLength(OUTCOMES.length)
      })
    )

    it.effect("an unknown trace, or another workspace's, is 404 to review and to list", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const stranger = yield* tenant(base)
        const theirs = yield* propose(base, stranger, AGENT, reply("hello"))
        for (const traceId of ["trc_does_not_exist", theirs.trace_id]) {
          expectError(yield* review(base, owner, traceId, { outcome: "accepted" }), 404, "trace_not_found")
          expectError(yield* call(base, "GET", `/v1/traces/${traceId}/review-events`, { token: owner.jwt }), 404)
        }
        // The stranger's trace was not touched.
        const trace = yield* traceById(base, stranger, theirs.trace_id)
        expect(trace.latest_review_outcome).toBeNull()
        expect((yield* listReviews(base, stranger, theirs.trace_id)).items).toEqual([])
      })
    )
  })

  describe("GET /v1/traces/{trace_id}/review-events and the trace", () => {
    it.effect("lists newest first; the trace shows the latest outcome and when it was given", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const run = yield* createRun(base, owner, { agent_id: AGENT, kind: "chat_session" })
        const decision = yield* propose(base, owner, AGENT, reply("hello"), { run_id: run.id })
        const untouched = yield* propose(base, owner, AGENT, reply("hello again"))

        const created: Array<ReviewBody> = []
        for (const outcome of ["accepted", "corrected", "rejected"]) {
          created.push(expectStatus(yield* review(base, owner, decision.trace_id, { outcome }), 201) as ReviewBody)
          const trace = yield* traceById(base, owner, decision.trace_id)
          expect(trace.latest_review_outcome).toBe(outcome)
          expect(trace.latest_reviewed_at).toBe(created[created.length - 1]!.created_at)
        }
        const listed = (yield* listReviews(base, owner, decision.trace_id)).items
        expect(listed.map((item) => item.id)).toEqual(created.map((item) => item.id).reverse())
        expect(listed[0]).toEqual(created[2])

        const other = yield* traceById(base, owner, untouched.trace_id)
        expect(other.latest_review_outcome).toBeNull()
        expect(other.latest_reviewed_at).toBeNull()
        // The run detail and the run's traces show the review too.
        const detail = yield* getRun(base, owner, run.id)
        expect(detail.traces.map((trace) => trace.latest_review_outcome)).toEqual(["rejected"])
        const runTraces = (yield* list<TraceBody>(base, owner, `/v1/runs/${run.id}/traces`, "traces")).items
        expect(runTraces[0]!.latest_reviewed_at).toBe(created[2]!.created_at)
      })
    )

    it.effect("limit: default 50, above 100 clamped to 100, below the minimum 400; cursor pages cover all", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const decision = yield* propose(base, owner, AGENT, reply("hello"))
        const created = yield* Effect.forEach(
          Array.from({ length: 103 }, (_, i) => i),
          (i) =>
            Effect.map(
              review(base, owner, decision.trace_id, { outcome: OUTCOMES[i % OUTCOMES.length], note: `n-${i}` }),
              (response) => expectStatus(response, 201) as ReviewBody
            ),
          { concurrency: 8 }
        )
        const byDefault = yield* listReviews(base, owner, decision.trace_id)
        expect(byDefault.items).toHaveLength(50)
        const clamped = yield* listReviews(base, owner, decision.trace_id, { limit: 1000 })
        expect(clamped.items).toHaveLength(100)
        expect(typeof clamped.next_cursor).toBe("string")
        const times = clamped.items.map((item) => item.created_at)
        expect([...times].sort().reverse()).toEqual(times)
        for (const limit of ["-1", "many"]) {
          expectValidation(
            yield* call(base, "GET", `/v1/traces/${decision.trace_id}/review-events?limit=${limit}`, {
              token: owner.jwt
            }),
            "limit"
          )
        }
        const pages = yield* allPages<ReviewBody>(
          base,
          owner,
          `/v1/traces/${decision.trace_id}/review-events`,
          "review_events",
          {
            limit: 10
          }
        )
        const seen = pages.flat().map((item) => item.id)
        expect(new Set(seen).size).toBe(seen.length)
        expect([...seen].sort()).toEqual(created.map((item) => item.id).sort())
      })
    )

    it.effect("a cursor that is not from this list is 400, never a 500", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const decision = yield* propose(base, owner, AGENT, reply("hello"))
        expectStatus(yield* review(base, owner, decision.trace_id, { outcome: "accepted" }), 201)
        for (const cursor of ["garbage", forgedCursor('["not a time", "rvw_x"]'), forgedCursor("[1, 2]")]) {
          const response = yield* call(
            base,
            "GET",
            `/v1/traces/${decision.trace_id}/review-events?cursor=${encodeURIComponent(cursor)}`,
            { token: owner.jwt }
          )
          expectNot5xx(response)
          expectError(response, 400)
        }
      })
    )
  })
})
