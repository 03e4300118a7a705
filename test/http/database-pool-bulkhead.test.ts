/**
 * Slow reports never take every connection decisions need. Here every
 * analytics query waits behind another session's lock on the aggregates (as
 * a report over a long history would run for seconds), more of them at once
 * than the pool has connections. A decision still answers 200 while they
 * wait (before, it waited for a connection and answered 503), and the
 * reports answer once the lock is gone. At most MAX_CONCURRENT_REPORTS
 * reports hold a connection; the others wait their turn.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { until } from "../support/Eventually.js"
import { forkedQueries, total } from "../analytics/analytics-helpers.js"
import { decisionWhileReadsWait, POOL_SIZE, smallPoolServer, steadyTenant } from "../support/SmallPool.js"
import { SERVER_OPTIONS } from "../support/TestServer.js"

layer(smallPoolServer, SERVER_OPTIONS)("reads that wait on the database and decisions", (it) => {
  it.effect(
    "a decision answers while more slow reads than the pool has connections wait",
    () =>
      Effect.gen(function* () {
        const { base, url, owner, decide } = yield* steadyTenant
        // Aggregated before the lock, so no consumer is left waiting on it with a connection.
        yield* until(Effect.filterOrFail(total(base, owner, "trace_count"), (count) => count === 1))

        // The reports hold every connection the service gives them, each waiting on the lock.
        const reads = forkedQueries(base, owner.jwt, POOL_SIZE + 2)
        const answers = yield* decisionWhileReadsWait(url, "analytics_buckets", reads, decide)
        expect(answers.map((answer) => answer.status)).toEqual(Array(POOL_SIZE + 2).fill(200))
      }),
    180_000
  )
})
