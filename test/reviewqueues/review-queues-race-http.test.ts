/**
 * Two people changing one review queue at once: each change names other
 * fields (one renames it, the other changes its sample rate), and both
 * hold. The two changes are made to wait together on the queue's row
 * (another session holds it), so they meet the same way on every run.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { lockedRows, serviceWaitsOnLocks } from "../support/Database.js"
import { until } from "../support/Eventually.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, TestDatabaseUrl, testServerWithDatabase } from "../support/TestServer.js"

layer(testServerWithDatabase("database"), SERVER_OPTIONS)("review queues changed at once", (it) => {
  it.effect("a rename and a sample-rate change made at once both hold", () =>
    Effect.gen(function* () {
      const url = yield* TestDatabaseUrl
      const owner = yield* tenant(yield* baseUrl)
      const queue = yield* owner.api.reviewQueues.createReviewQueue({
        payload: { name: "Denies", rules: [{ effect: "deny" }], sample_rate: 1 }
      })
      const change = (payload: { readonly name?: string; readonly sample_rate?: number }) =>
        owner.api.reviewQueues.updateReviewQueue({ path: { id: queue.id }, payload })

      yield* Effect.scoped(
        Effect.gen(function* () {
          yield* lockedRows(url, "select id from review_queues where id = $1 for update", [queue.id])
          const rename = yield* Effect.fork(change({ name: "All denies" }))
          const resample = yield* Effect.fork(change({ sample_rate: 0.5 }))
          // Both are waiting on the row when it is let go.
          yield* until(Effect.map(serviceWaitsOnLocks(url), (waits) => expect(waits).toBe(2)))
          return [rename, resample] as const
        })
      ).pipe(Effect.flatMap((fibers) => Fiber.joinAll(fibers)))

      const after = yield* owner.api.reviewQueues.getReviewQueue({ path: { id: queue.id } })
      expect({ name: after.name, sample_rate: after.sample_rate, rules: after.rules }).toEqual({
        name: "All denies",
        sample_rate: 0.5,
        rules: queue.rules
      })
    })
  )
})
