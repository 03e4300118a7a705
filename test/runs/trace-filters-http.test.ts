/**
 * The trace explorer's filters and live tail over HTTP: `GET /v1/traces`
 * narrows by event kind, policy, environment, review outcome (or
 * `unreviewed`), time range and a case-insensitive search of findings'
 * reasons (LIKE wildcards taken literally); the first page carries a
 * `tail_cursor`, and `?after=<tail_cursor>` answers only newer traces,
 * oldest first, with the cursor to poll next.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import type { ListTracesParams, TraceId } from "../../src/runs/Domain.js"
import { expectFailure } from "../support/Api.js"
import { call, expectValidation } from "../support/Raw.js"
import { tenant, type Tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import { createAgent, createPolicy, propose, reply } from "../support/Events.js"

const AGENT = "support-bot"

type Query = ListTracesParams & { readonly cursor?: string; readonly limit?: number }

const list = (owner: Tenant, query: Query = {}) => owner.api.traces.listTraces({ urlParams: query })
const ids = (answer: { readonly traces: ReadonlyArray<{ readonly trace_id: string }> }) =>
  answer.traces.map((trace) => trace.trace_id)

/** A tenant with a deny policy whose reason the search finds, one permit and one deny. */
const seeded = (base: string) =>
  Effect.gen(function* () {
    const owner = yield* tenant(base)
    yield* createAgent(base, owner, AGENT)
    yield* createPolicy(base, owner, "no-discount", {
      value: "secret discount",
      description: "Discount codes are 100% NOT allowed_here"
    })
    const permit = yield* propose(base, owner, AGENT, reply("hello there"))
    const deny = yield* propose(base, owner, AGENT, reply("use the secret discount"))
    expect([permit.effect, deny.effect]).toEqual(["permit", "deny"])
    return { owner, permit, deny }
  })

layer(testServer("database"), SERVER_OPTIONS)("trace filters and live tail (database event log)", (it) => {
  describe("filters", () => {
    it.effect("event kind, policy, environment, review outcome and full-text over findings' reasons", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const { deny, owner, permit } = yield* seeded(base)
        const both = [deny.trace_id, permit.trace_id]

        expect(ids(yield* list(owner, { event_kind: "output.proposed" }))).toEqual(both)
        expect(ids(yield* list(owner, { event_kind: "input.received" }))).toEqual([])
        expect(ids(yield* list(owner, { policy_id: "no-discount" }))).toEqual([deny.trace_id])
        expect(ids(yield* list(owner, { policy_id: "other-policy" }))).toEqual([])
        expect(ids(yield* list(owner, { environment_id: owner.defaultEnvironmentId }))).toEqual(both)
        expect(ids(yield* list(owner, { environment_id: "env_elsewhere" }))).toEqual([])

        // Case-insensitive substring; %, _ and \ are plain characters.
        expect(ids(yield* list(owner, { q: "not ALLOWED" }))).toEqual([deny.trace_id])
        expect(ids(yield* list(owner, { q: "100%" }))).toEqual([deny.trace_id])
        expect(ids(yield* list(owner, { q: "allowed_here" }))).toEqual([deny.trace_id])
        expect(ids(yield* list(owner, { q: "allowedXhere" }))).toEqual([])
        expect(ids(yield* list(owner, { q: "%" }))).toEqual([deny.trace_id])
        expect(ids(yield* list(owner, { q: "_" }))).toEqual([deny.trace_id])
        expect(ids(yield* list(owner, { q: "\\" }))).toEqual([])
        expect(ids(yield* list(owner, { q: "discount", effect: "permit" }))).toEqual([])

        expect(ids(yield* list(owner, { review_outcome: "unreviewed" }))).toEqual(both)
        yield* owner.api.reviewEvents.createReviewEvent({
          path: { trace_id: deny.trace_id as TraceId },
          payload: { outcome: "false_positive" }
        })
        expect(ids(yield* list(owner, { review_outcome: "false_positive" }))).toEqual([deny.trace_id])
        expect(ids(yield* list(owner, { review_outcome: "unreviewed" }))).toEqual([permit.trace_id])
        expect(ids(yield* list(owner, { review_outcome: "accepted" }))).toEqual([])

        // Another workspace sees none of it.
        const stranger = yield* tenant(base)
        expect(ids(yield* list(stranger, { q: "discount" }))).toEqual([])
      })
    )

    it.effect("start (inclusive) and end (exclusive) bound created_at; bad values are 400", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const { deny, owner, permit } = yield* seeded(base)
        const [denied, permitted] = (yield* list(owner)).traces
        expect(denied!.trace_id).toBe(deny.trace_id)
        expect(ids(yield* list(owner, { start: denied!.created_at }))).toContain(deny.trace_id)
        expect(ids(yield* list(owner, { end: permitted!.created_at }))).toEqual([])
        expect(ids(yield* list(owner, { start: "2000-01-01T00:00:00.000Z", end: "2999-01-01T00:00:00.000Z" }))).toEqual(
          [deny.trace_id, permit.trace_id]
        )
        expect(ids(yield* list(owner, { end: "2000-01-01T00:00:00.000Z" }))).toEqual([])
        // RFC 3339 offsets run to 23:59 (PostgreSQL reads at most 15:59): the instant is what counts.
        expect(
          ids(yield* list(owner, { start: "2000-01-01T00:00:00+23:59", end: "2999-01-01T00:00:00-23:59" }))
        ).toEqual([deny.trace_id, permit.trace_id])

        const token = owner.jwt
        expectValidation(yield* call(base, "GET", "/v1/traces?start=yesterday", { token }), "start")
        expectValidation(yield* call(base, "GET", "/v1/traces?event_kind=bogus", { token }), "event_kind")
        expectValidation(yield* call(base, "GET", "/v1/traces?review_outcome=maybe", { token }), "review_outcome")
        expectValidation(yield* call(base, "GET", "/v1/traces?q=", { token }), "q")
        expectValidation(yield* call(base, "GET", `/v1/traces?q=${"x".repeat(201)}`, { token }), "q")
      })
    )
  })

  describe("live tail", () => {
    it.effect("?after=<tail_cursor> answers newer traces oldest first, honours filters, and hands on the cursor", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        yield* createAgent(base, owner, AGENT)
        // An empty workspace still answers a cursor to tail from.
        const empty = yield* list(owner)
        expect(empty.traces).toEqual([])
        const fromStart = empty.tail_cursor!
        expect(typeof fromStart).toBe("string")

        const first = yield* propose(base, owner, AGENT, reply("first"))
        const page = yield* list(owner)
        expect(ids(page)).toEqual([first.trace_id])
        const tail = page.tail_cursor!
        expect(ids(yield* list(owner, { after: fromStart }))).toEqual([first.trace_id])

        const idle = yield* list(owner, { after: tail })
        expect(idle.traces).toEqual([])
        expect(idle.tail_cursor).toBe(tail)

        const second = yield* propose(base, owner, AGENT, reply("second"))
        const third = yield* propose(base, owner, AGENT, reply("I promise a full refund"))
        const polled = yield* list(owner, { after: tail })
        expect(ids(polled)).toEqual([second.trace_id, third.trace_id])
        expect(polled.next_cursor).toBeUndefined()
        expect((yield* list(owner, { after: polled.tail_cursor! })).traces).toEqual([])

        // Bounded by limit: the oldest first, and the cursor resumes after them.
        const one = yield* list(owner, { after: tail, limit: 1 })
        expect(ids(one)).toEqual([second.trace_id])
        expect(ids(yield* list(owner, { after: one.tail_cursor! }))).toEqual([third.trace_id])

        // Filters apply to the tail.
        expect(ids(yield* list(owner, { after: tail, effect: "deny" }))).toEqual([third.trace_id])

        const token = owner.jwt
        expectValidation(yield* call(base, "GET", "/v1/traces?after=nonsense", { token }), "after")
        yield* expectFailure(list(owner, { after: tail, cursor: tail }), 400, "validation_failed")
      })
    )
  })
})
