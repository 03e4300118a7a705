/**
 * `PATCH /v1/settings` merges `config` key by key into what is stored:
 * two patches of different keys at once must both be kept. The race is made
 * certain by holding the workspace's settings row locked until both patches
 * wait on it.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { lockedRows, serviceWaitsOnLocks } from "../support/Database.js"
import { eventually } from "../support/Eventually.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, TestDatabaseUrl, testServerWithDatabase } from "../support/TestServer.js"

layer(testServerWithDatabase("database"), SERVER_OPTIONS)("settings config under concurrent patches", (it) => {
  it.effect("two patches of different config keys at once keep both keys", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const url = yield* TestDatabaseUrl
      const owner = yield* tenant(base)
      const settings = owner.api.settings
      yield* settings.updateSettings({ payload: { config: { kept: "before" } } })

      const patches = yield* Effect.scoped(
        Effect.gen(function* () {
          yield* lockedRows(url, "select 1 from workspace_settings where workspace_id = $1 for update", [
            owner.workspaceId
          ])
          const first = yield* Effect.fork(settings.updateSettings({ payload: { config: { first: 1 } } }))
          const second = yield* Effect.fork(settings.updateSettings({ payload: { config: { second: 2 } } }))
          yield* eventually(Effect.filterOrFail(serviceWaitsOnLocks(url), (waiting) => waiting >= 2))
          return [first, second] as const
        })
      )
      yield* Fiber.join(patches[0])
      yield* Fiber.join(patches[1])
      expect((yield* settings.getSettings({})).config).toEqual({ kept: "before", first: 1, second: 2 })
    })
  )
})
