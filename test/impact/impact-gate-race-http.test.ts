/**
 * `require_impact_before_enable` under concurrent writes: an enable of a
 * replayed document and a PUT of a new one racing must not leave the new,
 * never-replayed document live. Each write decides on the policy as it is
 * when it commits (under the workspace's policy lock), not as it was read
 * before. The race is made certain by holding the policy's row locked until
 * both writes wait on it (or on the lock before it).
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Either, Fiber } from "effect"
import { PolicyId } from "../../src/catalog/Domain.js"
import { policyDocument, yamlBytes } from "../support/Events.js"
import { lockedRows, serviceWaitsOnLocks } from "../support/Database.js"
import { eventually } from "../support/Eventually.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, TestDatabaseUrl, testServerWithDatabase } from "../support/TestServer.js"
import { aroundNow, replay } from "./impact-helpers.js"

const path = { id: PolicyId.make("raced") }

layer(testServerWithDatabase("database"), SERVER_OPTIONS)("the impact gate under concurrent writes", (it) => {
  it.effect("an enable racing a PUT of a never-replayed document does not put that document live", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const url = yield* TestDatabaseUrl
      const owner = yield* tenant(base)
      const policies = owner.api.policies
      yield* owner.api.settings.updateSettings({ payload: { require_impact_before_enable: true } })
      const replayed = policyDocument("raced", { value: "alpha", enabled: false })
      const unreplayed = policyDocument("raced", { value: "beta" })
      yield* policies.createPolicy({ payload: yamlBytes(replayed) })
      yield* replay(owner, { enable_ids: ["raced"], ...aroundNow() })

      const [enable, put] = yield* Effect.scoped(
        Effect.gen(function* () {
          yield* lockedRows(url, "select 1 from policies where workspace_id = $1 and id = $2 for update", [
            owner.workspaceId,
            "raced"
          ])
          const enable = yield* Effect.fork(
            Effect.either(policies.setPolicyEnabled({ path, payload: { enabled: true } }))
          )
          const put = yield* Effect.fork(
            Effect.either(policies.replacePolicy({ path, payload: yamlBytes(unreplayed) }))
          )
          // Both writes are in: each waits on the row (or on the workspace's policy lock before it).
          yield* eventually(Effect.filterOrFail(serviceWaitsOnLocks(url), (waiting) => waiting >= 2))
          return [enable, put] as const
        })
      ).pipe(Effect.flatMap(([enable, put]) => Effect.all([Fiber.join(enable), Fiber.join(put)])))

      const current = yield* policies.getPolicy({ path })
      // At least one write succeeded; whichever came second saw the other's result.
      expect(Either.isRight(enable) || Either.isRight(put)).toBe(true)
      if (current.enabled) expect(current.source_yaml).toBe(replayed)
      // A refused write answered the gate's 409, never a 500.
      for (const outcome of [enable, put]) {
        if (Either.isLeft(outcome)) expect(outcome.left).toMatchObject({ code: "impact_required" })
      }
    })
  )
})
