/**
 * Group commit for gateway calls (src/platform/GroupCommit.ts): each
 * finished call hands its usage event and budget settlement over, and a
 * batch commits in one transaction: the events through the outbox, the
 * spend and released reservations in one ledger statement. One
 * commit per batch instead of per call keeps the budget rows (one per
 * workspace and window) from serializing traffic on the disk's commit
 * latency. Calls hand over after their response is out, and a batch lingers
 * (LINGER) before it commits, so nothing here is on a client's path. A
 * database that cannot take writes for now is waited out (up to
 * GATEWAY_USAGE_RETRY_SECONDS; calls queue meanwhile). On shutdown the queue
 * is drained before the scope ends.
 */
import { SqlClient } from "@effect/sql"
import { Duration, Effect, Schedule, Schema } from "effect"
import { Budgets, type Settlement } from "../billing/Budgets.js"
import { LlmUsageMessage } from "../billing/Domain.js"
import { AppConfig } from "../platform/Config.js"
import { allCommitted, makeGroupCommit } from "../platform/GroupCommit.js"
import { Outbox } from "../platform/Outbox.js"
import { isDatabaseUnavailable, transactionOf } from "../platform/Sql.js"
import { Topics } from "../platform/Topics.js"

const MAX_BATCH = 500
/**
 * How long a batch stays open after its first call. A commit right at the end
 * of a response would hold the budget row (and the event loop) just as the
 * client's next request asks for its reservation; lingering moves the commit
 * into that request's upstream wait, and gathers more calls per commit.
 */
const LINGER = Duration.millis(10)
const encodeUsage = Schema.encodeSync(LlmUsageMessage)
/** The longest pause between attempts while the database cannot take writes. */
const MAX_PAUSE = Duration.seconds(2)

export interface FinishedCall {
  readonly message: LlmUsageMessage
  readonly settlement: Settlement
}

export class UsageWriter extends Effect.Service<UsageWriter>()("gateway/UsageWriter", {
  scoped: Effect.gen(function* () {
    const budgets = yield* Budgets
    const config = yield* AppConfig
    const outbox = yield* Outbox
    const transaction = transactionOf(yield* SqlClient.SqlClient)

    // A database that cannot take writes now (failing over, connections cut) is waited out, for up to
    // GATEWAY_USAGE_RETRY_SECONDS an outage: the provider was paid, so its usage and spend must not be dropped.
    // The bound is the outage's, not each batch's: past it every batch (and the drain at shutdown) fails at
    // once until a commit succeeds again, so a long outage never holds the writer a bound per batch or call.
    const patience = Duration.toMillis(Duration.seconds(config.gatewayUsageRetrySeconds))
    let unavailableSince: number | undefined
    const worthWaiting = (error: unknown) => {
      if (!isDatabaseUnavailable(error)) return false
      unavailableSince ??= Date.now()
      return Date.now() - unavailableSince < patience
    }
    const waitOut = Schedule.exponential(Duration.millis(50)).pipe(
      Schedule.modifyDelay((delay) => Duration.min(delay, MAX_PAUSE))
    )
    const retryOther = Schedule.exponential(Duration.millis(50)).pipe(Schedule.intersect(Schedule.recurs(4)))

    const commit = (calls: ReadonlyArray<FinishedCall>) =>
      transaction(
        Effect.zipRight(
          outbox.enqueue(
            calls.map((call) => ({
              topic: Topics.llmUsage,
              key: call.message.workspace_id,
              value: encodeUsage(call.message)
            }))
          ),
          budgets.settle(calls.map((call) => call.settlement))
        )
      ).pipe(
        // The transaction turns database errors into defects: retried as failures (before, never retried).
        Effect.catchAllDefect(Effect.fail),
        Effect.retry({ schedule: waitOut, while: worthWaiting }),
        Effect.retry({ schedule: retryOther, while: (error) => !isDatabaseUnavailable(error) }),
        Effect.tap(() => (unavailableSince = undefined)),
        Effect.as(allCommitted(calls))
      )

    // Nothing waits on a usage record (calls hand over after their response is out): a failed record is logged.
    // A batch holds many workspaces' calls, so a failed batch is committed call by call: one bad record loses
    // only itself.
    return yield* makeGroupCommit({
      name: "gateway usage record",
      maxBatch: MAX_BATCH,
      linger: LINGER,
      retryAlone: true,
      commit
    })
  }),
  dependencies: [Budgets.Default]
}) {}
