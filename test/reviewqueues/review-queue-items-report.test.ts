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
import { Effect } from "effect"
import { call } from "../support/Raw.js"
import { decisionWhileReadsWait, POOL_SIZE, smallPoolServer, steadyTenant } from "../support/SmallPool.js"
import { SERVER_OPTIONS } from "../support/TestServer.js"

layer(smallPoolServer, SERVER_OPTIONS)("review queue items are a report", (it) => {
  it.effect(
    "a decision answers while more items reads than the pool has connections wait",
    () =>
      Effect.gen(function* () {
        const { base, url, owner, decide } = yield* steadyTenant
        const queue = yield* owner.api.reviewQueues.createReviewQueue({ payload: { name: "all", rules: [{}] } })

        const reads = Effect.fork(
          Effect.all(
            Array.from({ length: POOL_SIZE + 2 }, () =>
              call(base, "GET", `/v1/review-queues/${queue.id}/items`, { token: owner.jwt })
            ),
            { concurrency: "unbounded" }
          )
        )
        const answers = yield* decisionWhileReadsWait(url, "review_queues", reads, decide)
        expect(answers.map((answer) => answer.status)).toEqual(Array(POOL_SIZE + 2).fill(200))
      }),
    180_000
  )
})
