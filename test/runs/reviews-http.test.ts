/**
 * Review events over HTTP against the real service and PostgreSQL: a human
 * records an outcome on a trace (201, reviewer = the caller), the outcome
 * enum is enforced, unknown or other workspaces' traces are 404, the list is
 * newest first with its limit cap and cursor, and the trace then shows its
 * latest outcome and when it was given.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { type CreateReviewEvent, ReviewEvent, TraceId } from "../../src/runs/Domain.js"
import { TIMESTAMP } from "../support/Formats.js"
import { expectFailure, keysOf, withRaw } from "../support/Api.js"
import { call, expectValidation } from "../support/Raw.js"
import { tenant, type Tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import { allPages, appendEvent, type CursorParams, forgedCursor, getRun } from "./runs-helpers.js"
import { createAgent, createRun, propose, reply } from "../support/Events.js"

const AGENT = "support-bot"
const OUTCOMES = ["accepted", "corrected", "false_positive", "ignored", "missed_issue", "rejected"] as const
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

/** `POST /v1/traces/{trace_id}/review-events` (201). */
const review = (owner: Tenant, traceId: TraceId, body: typeof CreateReviewEvent.Type) =>
  owner.api.reviewEvents.createReviewEvent({ path: { trace_id: traceId }, payload: body })

/** The same request sent raw: for bodies outside the contract. */
const reviewRaw = (base: string, owner: Tenant, traceId: string, body: unknown) =>
  call(base, "POST", `/v1/traces/${encodeURIComponent(traceId)}/review-events`, { token: owner.jwt, body })

const listReviews = (owner: Tenant, traceId: TraceId, query: { readonly limit?: number } & CursorParams = {}) =>
  owner.api.reviewEvents.listReviewEvents({ path: { trace_id: traceId }, urlParams: query })

const traceById = (owner: Tenant, traceId: TraceId) =>
  Effect.map(owner.api.traces.listTraces({ urlParams: { limit: 100 } }), (page) => {
    const trace = page.traces.find((item) => item.trace_id === traceId)
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

        const { body, value: created } = yield* withRaw(
          owner.api.reviewEvents.createReviewEvent({
            path: { trace_id: decision.trace_id },
            payload: {
              outcome: "accepted",
              reason_codes: ["policy_correct", "refund_promise"],
              note: "Right call.",
              metadata: { queue: "refunds", score: 0.9 }
            },
            withResponse: true
          })
        )
        expect(keysOf(body)).toEqual(REVIEW_KEYS)
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

        // Only the outcome is required; the reviewer cannot be set from the body (sent raw: the contract has no such field).
        const minimalResponse = yield* reviewRaw(base, owner, decision.trace_id, {
          outcome: "false_positive",
          reviewer_id: "someone-else"
        })
        expect(minimalResponse.status, minimalResponse.text).toBe(201)
        const minimal = yield* Schema.decodeUnknown(ReviewEvent)(minimalResponse.body)
        expect(minimal.reviewer_id).toBe(owner.user_id)
        expect(minimal.reason_codes).toEqual([])
        expect(minimal.note).toBeNull()
        expect(minimal.id).not.toBe(created.id)

        // A trace without a run gets null run ids.
        const loose = yield* propose(base, owner, AGENT, reply("hello"))
        const looseReview = yield* review(owner, loose.trace_id, { outcome: "ignored" })
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
          expect((yield* review(owner, decision.trace_id, { outcome })).outcome).toBe(outcome)
        }
        for (const outcome of ["approved", "ACCEPTED", "", 1, null]) {
          expectValidation(yield* reviewRaw(base, owner, decision.trace_id, { outcome }), "outcome")
        }
        expectValidation(yield* reviewRaw(base, owner, decision.trace_id, {}), "outcome")
        expectValidation(
          yield* reviewRaw(base, owner, decision.trace_id, { outcome: "accepted", reason_codes: "x" }),
          "reason_codes"
        )
        expect((yield* listReviews(owner, decision.trace_id)).review_events).toHaveLength(OUTCOMES.length)
      })
    )

    it.effect("an unknown trace, or another workspace's, is 404 to review and to list", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const stranger = yield* tenant(base)
        const theirs = yield* propose(base, stranger, AGENT, reply("hello"))
        for (const traceId of [TraceId.make("trc_does_not_exist"), theirs.trace_id]) {
          yield* expectFailure(review(owner, traceId, { outcome: "accepted" }), 404, "trace_not_found")
          yield* expectFailure(listReviews(owner, traceId), 404)
        }
        // The stranger's trace was not touched.
        const trace = yield* traceById(stranger, theirs.trace_id)
        expect(trace.latest_review_outcome).toBeNull()
        expect((yield* listReviews(stranger, theirs.trace_id)).review_events).toEqual([])
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

        const created: Array<ReviewEvent> = []
        for (const outcome of ["accepted", "corrected", "rejected"] as const) {
          created.push(yield* review(owner, decision.trace_id, { outcome }))
          const trace = yield* traceById(owner, decision.trace_id)
          expect(trace.latest_review_outcome).toBe(outcome)
          expect(trace.latest_reviewed_at).toBe(created[created.length - 1]!.created_at)
        }
        const listed = (yield* listReviews(owner, decision.trace_id)).review_events
        expect(listed.map((item) => item.id)).toEqual(created.map((item) => item.id).reverse())
        expect(listed[0]).toEqual(created[2])

        const other = yield* traceById(owner, untouched.trace_id)
        expect(other.latest_review_outcome).toBeNull()
        expect(other.latest_reviewed_at).toBeNull()
        // The run detail and the run's traces show the review too.
        const detail = yield* getRun(base, owner, run.id)
        expect(detail.traces.map((trace) => trace.latest_review_outcome)).toEqual(["rejected"])
        const runTraces = (yield* owner.api.runs.listRunTraces({ path: { id: run.id }, urlParams: {} })).traces
        expect(runTraces[0]!.latest_reviewed_at).toBe(created[2]!.created_at)
      })
    )

    it.effect("reviews posted at once: the trace shows the newest of them, never an older one committed last", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const decision = yield* propose(base, owner, AGENT, reply("hello"))
        for (let round = 0; round < 4; round++) {
          const posted = yield* Effect.forEach(
            Array.from({ length: 12 }, (_, i) => OUTCOMES[i % OUTCOMES.length]!),
            (outcome) => review(owner, decision.trace_id, { outcome }),
            { concurrency: "unbounded" }
          )
          const newestAt = posted.map((item) => item.created_at).sort()[posted.length - 1]!
          const trace = yield* owner.api.traces.getTrace({ path: { trace_id: decision.trace_id } })
          expect(trace.latest_reviewed_at, `round ${round}`).toBe(newestAt)
          const newest = posted.filter((item) => item.created_at === newestAt).map((item) => item.outcome)
          expect(newest).toContain(trace.latest_review_outcome)
        }
      })
    )

    it.effect("limit: default 50, above 100 clamped to 100, below the minimum 400; cursor pages cover all", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const decision = yield* propose(base, owner, AGENT, reply("hello"))
        const created = yield* Effect.forEach(
          Array.from({ length: 103 }, (_, i) => i),
          (i) => review(owner, decision.trace_id, { outcome: OUTCOMES[i % OUTCOMES.length]!, note: `n-${i}` }),
          { concurrency: 8 }
        )
        const byDefault = yield* listReviews(owner, decision.trace_id)
        expect(byDefault.review_events).toHaveLength(50)
        const clamped = yield* listReviews(owner, decision.trace_id, { limit: 1000 })
        expect(clamped.review_events).toHaveLength(100)
        expect(typeof clamped.next_cursor).toBe("string")
        const times = clamped.review_events.map((item) => item.created_at)
        expect([...times].sort().reverse()).toEqual(times)
        for (const limit of ["-1", "many"]) {
          expectValidation(
            yield* call(base, "GET", `/v1/traces/${decision.trace_id}/review-events?limit=${limit}`, {
              token: owner.jwt
            }),
            "limit"
          )
        }
        const pages = yield* allPages("review_events", (cursor) =>
          listReviews(owner, decision.trace_id, { limit: 10, ...cursor })
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
        yield* review(owner, decision.trace_id, { outcome: "accepted" })
        for (const cursor of ["garbage", forgedCursor('["not a time", "rvw_x"]'), forgedCursor("[1, 2]")]) {
          yield* expectFailure(listReviews(owner, decision.trace_id, { cursor }), 400)
        }
      })
    )
  })
})
