/**
 * A runtime key bound to one environment creates runs only there: naming
 * another environment of the workspace is 403 `environment_mismatch`, as
 * `principal.environment_id` of `POST /v1/events` is; it changes only runs of
 * its own environment (`PATCH /v1/runs/{id}` of another's run is 403), and
 * appends run events and review events only to runs and traces of its own.
 * A decision (`POST /v1/events`) may name only a run of its own environment:
 * another's is 403 and that run counts nothing; a run id no run has stays a
 * bare correlation id.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { expectFailure } from "../support/Api.js"
import { createEnvironment, createKey, keyClient, tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import { createAgent, createRun, propose, proposeCall, reply } from "../support/Events.js"
import { until } from "../support/Eventually.js"

/** A tenant, a run in its default (production) environment, and a client with a key bound to staging. */
const stagingKeyAndProductionRun = Effect.gen(function* () {
  const base = yield* baseUrl
  const owner = yield* tenant(base)
  const staging = yield* createEnvironment(owner)
  const production = yield* createRun(base, owner, { agent_id: "a", kind: "job" })
  const api = yield* keyClient(base, yield* createKey(owner, { environment_id: staging.id }))
  return { api, owner, production }
})

layer(testServer("database"), SERVER_OPTIONS)("runs and a runtime key's environment", (it) => {
  describe("POST /v1/runs", () => {
    it.effect("a key bound to one environment cannot create a run in another (403); its own is accepted", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const staging = yield* createEnvironment(owner)
        const key = yield* createKey(owner, { environment_id: staging.id })
        const api = yield* keyClient(base, key)
        yield* expectFailure(
          api.runs.createRun({ payload: { agent_id: "a", kind: "job", environment_id: owner.defaultEnvironmentId } }),
          403
        )
        const own = yield* api.runs.createRun({ payload: { agent_id: "a", kind: "job", environment_id: staging.id } })
        expect(own.environment_id).toBe(staging.id)
      })
    )
  })

  describe("PATCH /v1/runs/{id}", () => {
    it.effect("a key bound to one environment cannot change a run of another (403); its own runs it can", () =>
      Effect.gen(function* () {
        const { api, owner, production } = yield* stagingKeyAndProductionRun
        yield* expectFailure(api.runs.updateRun({ path: { id: production.id }, payload: { status: "completed" } }), 403)
        const own = yield* api.runs.createRun({ payload: { agent_id: "a", kind: "job" } })
        const done = yield* api.runs.updateRun({ path: { id: own.id }, payload: { status: "completed" } })
        expect(done.status).toBe("completed")
        expect((yield* owner.api.runs.getRun({ path: { id: production.id } })).run.status).toBe("running")
      })
    )
  })

  describe("POST /v1/runs/{id}/events", () => {
    it.effect(
      "a key bound to one environment cannot append to a run of another (403), and sequences stay gap-free",
      () =>
        Effect.gen(function* () {
          const { api, owner, production } = yield* stagingKeyAndProductionRun
          yield* expectFailure(
            api.runs.appendRunEvent({ path: { id: production.id }, payload: { kind: "user_turn" } }),
            403,
            "environment_mismatch"
          )
          // Refused and accepted appends to the same run, sent together so they share commit batches.
          const outcomes = yield* Effect.all(
            Array.from({ length: 20 }, (_, index) =>
              Effect.either(
                (index % 2 === 0 ? api : owner.api).runs.appendRunEvent({
                  path: { id: production.id },
                  payload: { kind: "agent_turn", label: `turn ${index}` }
                })
              )
            ),
            { concurrency: "unbounded" }
          )
          expect(outcomes.filter((outcome) => outcome._tag === "Left")).toHaveLength(10)
          const stored = yield* owner.api.runs.listRunEvents({ path: { id: production.id }, urlParams: {} })
          expect(stored.events.map((event) => event.sequence)).toEqual(Array.from({ length: 10 }, (_, i) => i + 1))
          const own = yield* api.runs.createRun({ payload: { agent_id: "a", kind: "job" } })
          const appended = yield* api.runs.appendRunEvent({ path: { id: own.id }, payload: { kind: "user_turn" } })
          expect(appended.sequence).toBe(1)
        })
    )
  })

  describe("POST /v1/traces/{id}/review-events", () => {
    it.effect("a key bound to one environment cannot review a trace of another (403); its own traces it can", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const staging = yield* createEnvironment(owner)
        yield* createAgent(base, owner, "reviewed")
        const key = yield* createKey(owner, { environment_id: staging.id })
        const api = yield* keyClient(base, key)
        const production = yield* propose(base, owner, "reviewed", reply("hello"))
        yield* expectFailure(
          api.reviewEvents.createReviewEvent({
            path: { trace_id: production.trace_id },
            payload: { outcome: "accepted" }
          }),
          403,
          "environment_mismatch"
        )
        const reviews = yield* owner.api.reviewEvents.listReviewEvents({
          path: { trace_id: production.trace_id },
          urlParams: {}
        })
        expect(reviews.review_events).toHaveLength(0)
        const own = yield* propose(base, owner, "reviewed", reply("hello"), {
          token: key.plaintext_key,
          environment_id: staging.id
        })
        const review = yield* api.reviewEvents.createReviewEvent({
          path: { trace_id: own.trace_id },
          payload: { outcome: "accepted" }
        })
        expect(review.outcome).toBe("accepted")
      })
    )
  })

  describe("POST /v1/events with run_id", () => {
    it.effect("a decision naming another environment's run is 403 and counts nothing; its own run counts it", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const staging = yield* createEnvironment(owner)
        yield* createAgent(base, owner, "a")
        const key = yield* createKey(owner, { environment_id: staging.id })
        const api = yield* keyClient(base, key)
        const production = yield* createRun(base, owner, { agent_id: "a", kind: "job" })
        const own = yield* api.runs.createRun({ payload: { agent_id: "a", kind: "job" } })
        const asStaging = { token: key.plaintext_key, environment_id: staging.id }
        // Twice: the second is answered from what the first read.
        for (let attempt = 0; attempt < 2; attempt++) {
          yield* expectFailure(
            proposeCall(base, owner, "a", reply("hello"), { ...asStaging, run_id: production.id }),
            403,
            "environment_mismatch"
          )
        }
        yield* propose(base, owner, "a", reply("hello"), { ...asStaging, run_id: own.id })
        // A run id no run has is a correlation id, as before.
        yield* propose(base, owner, "a", reply("hello"), { ...asStaging, run_id: "run_not_created" })
        yield* propose(base, owner, "a", reply("hello"), { run_id: production.id })
        yield* until(
          Effect.gen(function* () {
            const counted = yield* owner.api.runs.getRun({ path: { id: own.id } })
            expect(counted.run.trace_count).toBe(1)
            const other = yield* owner.api.runs.getRun({ path: { id: production.id } })
            expect(other.run.trace_count).toBe(1)
          })
        )
        const listed = yield* owner.api.runs.listRunTraces({ path: { id: production.id }, urlParams: {} })
        expect(listed.traces.map((trace) => trace.environment_id)).toEqual([owner.defaultEnvironmentId])
      })
    )
  })
})
