/**
 * A runtime key bound to one environment creates runs only there: naming
 * another environment of the workspace is 403 `environment_mismatch`, as
 * `principal.environment_id` of `POST /v1/events` is.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { expectFailure } from "../support/Api.js"
import { createEnvironment, createKey, keyClient, tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"

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
})
