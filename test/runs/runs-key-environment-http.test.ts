/**
 * A runtime key bound to one environment creates runs only there: naming
 * another environment of the workspace is 403 `environment_mismatch`, as
 * `principal.environment_id` of `POST /v1/events` is; it changes only runs of
 * its own environment (`PATCH /v1/runs/{id}` of another's run is 403).
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { expectFailure } from "../support/Api.js"
import { createEnvironment, createKey, keyClient, tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import { createRun } from "../support/Events.js"

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
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const staging = yield* createEnvironment(owner)
        const production = yield* createRun(base, owner, { agent_id: "a", kind: "job" })
        const api = yield* keyClient(base, yield* createKey(owner, { environment_id: staging.id }))
        yield* expectFailure(api.runs.updateRun({ path: { id: production.id }, payload: { status: "completed" } }), 403)
        const own = yield* api.runs.createRun({ payload: { agent_id: "a", kind: "job" } })
        const done = yield* api.runs.updateRun({ path: { id: own.id }, payload: { status: "completed" } })
        expect(done.status).toBe("completed")
        expect((yield* owner.api.runs.getRun({ path: { id: production.id } })).run.status).toBe("running")
      })
    )
  })
})
