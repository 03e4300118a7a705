/**
 * A review queue's items are read through its rules over every trace of the
 * workspace (a hash of each trace id, progress counted over all of them): a
 * report, served at most MAX_CONCURRENT_REPORTS at once like the trace list.
 * Here the items reads wait behind another session's lock, more of them than
 * the pool has connections; a decision still answers 200 (before, the reads
 * held every connection and the decision answered 503), and the reads answer
 * once the lock is gone.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { createAgent, eventBody, reply } from "../support/Events.js"
import { until } from "../support/Eventually.js"
import { lockedTable, serviceWaitsOnLocks } from "../support/Database.js"
import { call } from "../support/Raw.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, TestDatabaseUrl, testServerWithDatabase } from "../support/TestServer.js"

const POOL_SIZE = 4

layer(
  testServerWithDatabase("database", { DATABASE_POOL_SIZE: String(POOL_SIZE), DATABASE_STATEMENT_TIMEOUT_MS: "60000" }),
  SERVER_OPTIONS
)("review queue items are a report", (it) => {
  it.effect(
    "a decision answers while more items reads than the pool has connections wait",
    () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const url = yield* TestDatabaseUrl
        const owner = yield* tenant(base)
        yield* createAgent(base, owner, "steady")
        const decide = call(base, "POST", "/v1/events", {
          token: owner.jwt,
          body: eventBody(owner, "steady", reply("hello"))
        })
        expect((yield* decide).status).toBe(200)
        const queue = yield* owner.api.reviewQueues.createReviewQueue({ payload: { name: "all", rules: [{}] } })

        const answers = yield* Effect.scoped(
          Effect.gen(function* () {
            yield* lockedTable(url, "review_queues")
            const reads = yield* Effect.fork(
              Effect.all(
                Array.from({ length: POOL_SIZE + 2 }, () =>
                  call(base, "GET", `/v1/review-queues/${queue.id}/items`, { token: owner.jwt })
                ),
                { concurrency: "unbounded" }
              )
            )
            yield* until(
              Effect.filterOrFail(serviceWaitsOnLocks(url), (n) => n >= 1),
              "10 seconds"
            )
            const decision = yield* decide
            expect(decision.status, JSON.stringify(decision.body)).toBe(200)
            return reads
          })
        ).pipe(Effect.flatMap(Fiber.join))
        expect(answers.map((answer) => answer.status)).toEqual(Array(POOL_SIZE + 2).fill(200))
      }),
    180_000
  )
})
