/**
 * Review queues over HTTP: create, read, change and delete a queue (each
 * change in the audit log), bounded rules and sample rates (400 otherwise),
 * and its items: the traces its rules pick, sampled deterministically by a
 * hash of the trace id, not yet reviewed first, with progress counts.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { createHash } from "node:crypto"
import type { ReviewQueueId } from "../../src/reviewqueues/Domain.js"
import type { TraceId } from "../../src/runs/Domain.js"
import { expectFailure } from "../support/Api.js"
import { createAgent, createPolicy, propose, reply } from "../support/Events.js"
import { call, expectValidation } from "../support/Raw.js"
import { tenant, type Tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"

const AGENT = "support-bot"
const OTHER = "sales-bot"

/** The sample place of a trace, as the service computes it: md5's first 32 bits over 2^32. */
const bucketOf = (traceId: string) =>
  parseInt(createHash("md5").update(traceId).digest("hex").slice(0, 8), 16) / 2 ** 32

const queueId = (id: string) => id as ReviewQueueId

const itemsOf = (owner: Tenant, id: string, urlParams: { readonly limit?: number; readonly cursor?: string } = {}) =>
  owner.api.reviewQueues.listReviewQueueItems({ path: { id: queueId(id) }, urlParams })

/** Every item of a queue, following next_cursor with pages of `limit`. */
const allItems = (owner: Tenant, id: string, limit: number) =>
  Effect.gen(function* () {
    const ids: Array<string> = []
    let cursor: string | undefined
    do {
      const page = yield* itemsOf(owner, id, cursor === undefined ? { limit } : { limit, cursor })
      expect(page.items.length).toBeLessThanOrEqual(limit)
      ids.push(...page.items.map((item) => item.trace_id))
      cursor = page.next_cursor
    } while (cursor !== undefined)
    return ids
  })

layer(testServer("database"), SERVER_OPTIONS)("review queues (database event log)", (it) => {
  describe("queues", () => {
    it.effect("create, read, list, change and delete; each change is audited; bounds are 400; scoped", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const created = yield* owner.api.reviewQueues.createReviewQueue({
          payload: { name: "Support denies", rules: [{ agent_id: AGENT, effect: "deny" }] }
        })
        expect(created).toMatchObject({
          name: "Support denies",
          rules: [{ agent_id: AGENT, effect: "deny" }],
          sample_rate: 1
        })
        expect(created.id).toMatch(/^rq_/)
        expect(yield* owner.api.reviewQueues.getReviewQueue({ path: { id: created.id } })).toEqual(created)

        const second = yield* owner.api.reviewQueues.createReviewQueue({
          payload: { name: "Permits sample", rules: [{ effect: "permit" }], sample_rate: 0.05 }
        })
        const listed = yield* owner.api.reviewQueues.listReviewQueues({ urlParams: {} })
        expect(listed.review_queues.map((queue) => queue.id)).toEqual([second.id, created.id])
        const paged = yield* owner.api.reviewQueues.listReviewQueues({ urlParams: { limit: 1 } })
        expect(paged.review_queues.map((queue) => queue.id)).toEqual([second.id])
        const rest = yield* owner.api.reviewQueues.listReviewQueues({
          urlParams: { limit: 1, cursor: paged.next_cursor! }
        })
        expect(rest.review_queues.map((queue) => queue.id)).toEqual([created.id])

        const renamed = yield* owner.api.reviewQueues.updateReviewQueue({
          path: { id: created.id },
          payload: { name: "Denies", sample_rate: 0.5 }
        })
        expect(renamed).toMatchObject({ name: "Denies", sample_rate: 0.5, rules: created.rules })
        yield* owner.api.reviewQueues.deleteReviewQueue({ path: { id: created.id } })
        yield* expectFailure(
          owner.api.reviewQueues.getReviewQueue({ path: { id: created.id } }),
          404,
          "review_queue_not_found"
        )
        yield* expectFailure(owner.api.reviewQueues.deleteReviewQueue({ path: { id: created.id } }), 404)
        yield* expectFailure(itemsOf(owner, created.id), 404)

        const audit = yield* owner.api.auditEvents.listAuditEvents({ urlParams: { resource_type: "review_queue" } })
        const actions = audit.audit_events
          .filter((event) => event.resource_id === created.id)
          .map((event) => event.action)
        expect(actions).toEqual(["review_queue.delete", "review_queue.update", "review_queue.create"])
        for (const event of audit.audit_events) expect(event.actor).toEqual({ kind: "user", id: owner.user_id })

        const stranger = yield* tenant(base)
        yield* expectFailure(stranger.api.reviewQueues.getReviewQueue({ path: { id: second.id } }), 404)
        yield* expectFailure(
          stranger.api.reviewQueues.updateReviewQueue({ path: { id: second.id }, payload: { name: "mine" } }),
          404
        )
        expect((yield* stranger.api.reviewQueues.listReviewQueues({ urlParams: {} })).review_queues).toEqual([])

        const token = owner.jwt
        const post = (body: unknown) => call(base, "POST", "/v1/review-queues", { token, body })
        expectValidation(yield* post({ name: "x", rules: [] }), "rules")
        expectValidation(yield* post({ name: "x", rules: Array.from({ length: 21 }, () => ({})) }), "rules")
        expectValidation(yield* post({ name: "x", rules: [{}], sample_rate: 1.5 }), "sample_rate")
        expectValidation(yield* post({ name: "x", rules: [{ sample_rate: -0.1 }] }), "rules.0.sample_rate")
        expectValidation(yield* post({ name: "x", rules: [{ effect: "maybe" }] }), "rules.0.effect")
        expectValidation(yield* post({ name: "", rules: [{}] }), "name")
        expectValidation(yield* post({ name: "x".repeat(201), rules: [{}] }), "name")
        expectValidation(
          yield* call(base, "PATCH", `/v1/review-queues/${second.id}`, { token, body: { rules: [] } }),
          "rules"
        )
      })
    )
  })

  describe("items", () => {
    it.effect("the rules' traces, sampled by trace id, pending first, with progress; paging is complete", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        yield* createAgent(base, owner, AGENT)
        yield* createAgent(base, owner, OTHER)
        yield* createPolicy(base, owner, "no-discount", { value: "secret discount" })
        const denies = yield* Effect.forEach([1, 2, 3], (i) =>
          propose(base, owner, AGENT, reply(`use the secret discount ${i}`))
        )
        const otherDeny = yield* propose(base, owner, OTHER, reply("a secret discount"))
        const permits = yield* Effect.forEach(
          Array.from({ length: 40 }, (_, i) => i),
          (i) => propose(base, owner, i % 2 === 0 ? AGENT : OTHER, reply(`hello ${i}`)),
          { concurrency: 8 }
        )
        expect(new Set([...denies, otherDeny].map((d) => d.effect))).toEqual(new Set(["deny"]))
        expect(new Set(permits.map((d) => d.effect))).toEqual(new Set(["permit"]))

        // All denies of one agent, and a quarter of every permit.
        const queue = yield* owner.api.reviewQueues.createReviewQueue({
          payload: {
            name: "Mixed",
            rules: [
              { agent_id: AGENT, effect: "deny" },
              { effect: "permit", sample_rate: 0.25 }
            ]
          }
        })
        const sampled = permits.filter((d) => bucketOf(d.trace_id) < 0.25).map((d) => d.trace_id)
        const expected = new Set([...denies.map((d) => d.trace_id), ...sampled])
        const first = yield* itemsOf(owner, queue.id, { limit: 100 })
        expect(new Set(first.items.map((item) => item.trace_id))).toEqual(expected)
        expect(first.progress).toEqual({ total: expected.size, reviewed: 0, pending: expected.size })
        // Deterministic: the same traces on every read.
        expect((yield* itemsOf(owner, queue.id, { limit: 100 })).items).toEqual(first.items)

        // A reviewed trace moves behind the pending ones.
        const reviewed = first.items[0]!.trace_id
        yield* owner.api.reviewEvents.createReviewEvent({
          path: { trace_id: reviewed as TraceId },
          payload: { outcome: "accepted" }
        })
        const after = yield* itemsOf(owner, queue.id, { limit: 100 })
        expect(after.progress).toEqual({ total: expected.size, reviewed: 1, pending: expected.size - 1 })
        expect(after.items[after.items.length - 1]!.trace_id).toBe(reviewed)
        expect(after.items.slice(0, -1).every((item) => item.latest_review_outcome === null)).toBe(true)
        const paged = yield* allItems(owner, queue.id, 2)
        expect(paged).toEqual(after.items.map((item) => item.trace_id))

        // Every finding of one policy, whatever the agent; the queue's own sample rate applies to its rules.
        const byPolicy = yield* owner.api.reviewQueues.createReviewQueue({
          payload: { name: "Discounts", rules: [{ policy_id: "no-discount" }] }
        })
        const policyItems = yield* itemsOf(owner, byPolicy.id, { limit: 100 })
        expect(new Set(policyItems.items.map((item) => item.trace_id))).toEqual(
          new Set([...denies, otherDeny].map((d) => d.trace_id))
        )
        yield* owner.api.reviewQueues.updateReviewQueue({ path: { id: byPolicy.id }, payload: { sample_rate: 0 } })
        expect((yield* itemsOf(owner, byPolicy.id)).progress.total).toBe(0)

        const token = owner.jwt
        expectValidation(
          yield* call(base, "GET", `/v1/review-queues/${queue.id}/items?cursor=bogus`, { token }),
          "cursor"
        )
        // Date.parse reads these, PostgreSQL does not: a forged item cursor is 400, never a 500.
        for (const at of ["1", "2026-02-30T00:00:00.000Z", "0000-01-01T00:00:00.000Z"]) {
          const forged = Buffer.from(JSON.stringify(["0", at, "trc_x"])).toString("base64url")
          expectValidation(
            yield* call(base, "GET", `/v1/review-queues/${queue.id}/items?cursor=${forged}`, { token }),
            "cursor"
          )
        }
      })
    )

    it.effect("a page ends early, with next_cursor, once its traces' payloads reach 4 MiB; paging stays complete", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        yield* createAgent(base, owner, AGENT)
        // Each decision keeps three 250,000-character params (within the default 256 KiB match cap): ~750 KB.
        const big = (i: number, key: string) => `${key}${i} ${"x".repeat(250_000)}`
        const decided = yield* Effect.forEach(
          Array.from({ length: 7 }, (_, i) => i),
          (i) =>
            propose(base, owner, AGENT, {
              operation: "send_note",
              params: { a: big(i, "a"), b: big(i, "b"), c: big(i, "c") }
            })
        )
        const queue = yield* owner.api.reviewQueues.createReviewQueue({
          payload: { name: "Everything", rules: [{ agent_id: AGENT }] }
        })
        const first = yield* itemsOf(owner, queue.id, { limit: 100 })
        // 7 x ~750 KB is over 4 MiB: the page stops after the trace that reaches it, the 6th.
        expect(first.items).toHaveLength(6)
        expect(first.next_cursor).toBeDefined()
        expect(first.progress.total).toBe(7)
        const rest = yield* itemsOf(owner, queue.id, { limit: 100, cursor: first.next_cursor! })
        expect(rest.next_cursor).toBeUndefined()
        expect([...first.items, ...rest.items].map((item) => item.trace_id).sort()).toEqual(
          decided.map((d) => d.trace_id).sort()
        )
      })
    )
  })
})
