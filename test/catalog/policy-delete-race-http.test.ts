/**
 * A batch enable is all-or-nothing: an id it cannot find is a 404 that
 * changes nothing. That must hold against a DELETE of one of its policies at
 * the same moment: the enable either finds every policy (and enables them,
 * the delete then removing one) or answers 404 and enables none; never a 200
 * that enabled the others and left the deleted one out. The race is made
 * certain by holding the policy's row locked until both requests wait.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { lockedRows, serviceWaitsOnLocks } from "../support/Database.js"
import { eventually } from "../support/Eventually.js"
import { createPolicy } from "../support/Events.js"
import { call } from "../support/Raw.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, TestDatabaseUrl, testServerWithDatabase } from "../support/TestServer.js"
import { listPolicies } from "./catalog-helpers.js"

layer(testServerWithDatabase("database"), SERVER_OPTIONS)("policy delete racing a batch enable", (it) => {
  it.effect("the enable answers 404 and enables none, or enables both before the delete", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const url = yield* TestDatabaseUrl
      const owner = yield* tenant(base)
      yield* createPolicy(base, owner, "goes-away", { value: "voucher", enabled: false })
      yield* createPolicy(base, owner, "stays", { value: "coupon", enabled: false })

      const [removed, enabled] = yield* Effect.scoped(
        Effect.gen(function* () {
          yield* lockedRows(url, "select 1 from policies where workspace_id = $1 and id = $2 for update", [
            owner.workspaceId,
            "goes-away"
          ])
          const remove = yield* Effect.fork(call(base, "DELETE", "/v1/policies/goes-away", { token: owner.jwt }))
          yield* eventually(Effect.filterOrFail(serviceWaitsOnLocks(url), (waiting) => waiting >= 1))
          const enable = yield* Effect.fork(
            call(base, "PATCH", "/v1/policies/batch/enabled", {
              token: owner.jwt,
              body: { ids: ["goes-away", "stays"], enabled: true }
            })
          )
          yield* eventually(Effect.filterOrFail(serviceWaitsOnLocks(url), (waiting) => waiting >= 2))
          return [remove, enable] as const
        })
      ).pipe(Effect.flatMap(([remove, enable]) => Effect.all([Fiber.join(remove), Fiber.join(enable)])))

      expect(removed.status).toBe(204)
      const left = yield* listPolicies(owner)
      expect(left.map((policy) => policy.id)).toEqual(["stays"])
      if (enabled.status === 200) {
        // Both were found and enabled, then one deleted: the answer names both.
        expect((enabled.body as { policies: ReadonlyArray<{ id: string }> }).policies.map((p) => p.id).sort()).toEqual([
          "goes-away",
          "stays"
        ])
        expect(left[0]?.enabled).toBe(true)
      } else {
        expect(enabled.status).toBe(404)
        expect(left[0]?.enabled).toBe(false)
      }
    })
  )
})
