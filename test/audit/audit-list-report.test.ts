/**
 * The audit list is a report (served at most MAX_CONCURRENT_REPORTS at once): a filter that few rows match
 * (an actor, a time window) reads the workspace's whole chain. Here the list reads wait behind another
 * session's lock, more of them than the pool has connections; a decision still answers 200 (before, the
 * reads held every connection and the decision answered 503), and the reads answer once the lock is gone.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { call } from "../support/Raw.js"
import { decisionWhileReadsWait, POOL_SIZE, smallPoolServer, steadyTenant } from "../support/SmallPool.js"
import { SERVER_OPTIONS } from "../support/TestServer.js"

layer(smallPoolServer, SERVER_OPTIONS)("the audit list is a report", (it) => {
  it.effect(
    "a decision answers while more audit list reads than the pool has connections wait",
    () =>
      Effect.gen(function* () {
        const { base, url, owner, decide } = yield* steadyTenant
        const reads = Effect.fork(
          Effect.all(
            Array.from({ length: POOL_SIZE + 2 }, () =>
              call(base, "GET", "/v1/audit-events?actor=system", { token: owner.jwt })
            ),
            { concurrency: "unbounded" }
          )
        )
        const answers = yield* decisionWhileReadsWait(url, "audit_events", reads, decide)
        expect(answers.map((answer) => answer.status)).toEqual(Array(POOL_SIZE + 2).fill(200))
      }),
    180_000
  )
})
