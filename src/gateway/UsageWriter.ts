/**
 * Group commit for gateway calls (src/platform/GroupCommit.ts): each
 * finished call hands its usage event and budget settlement over, and a
 * batch commits in one transaction: the events through the outbox, the
 * spend and released reservations in one ledger statement. One
 * commit per batch instead of per call keeps the budget rows (one per
 * workspace and window) from serializing traffic on the disk's commit
 * latency. Calls hand over after their response is out, and a batch lingers
 * (LINGER) before it commits, so nothing here is on a client's path. On
 * shutdown the queue is drained before the scope ends.
 */
import { SqlClient } from "@effect/sql"
import { Cause, Duration, Effect, Schedule, Schema } from "effect"
import { Budgets, type Settlement } from "../billing/Budgets.js"
import { LlmUsageMessage } from "../billing/Domain.js"
import { AppConfig } from "../platform/Config.js"
import { recordFirstTime } from "../platform/Consumer.js"
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
/** The `processed_events` group recording the calls whose usage was committed (their event ids). */
const SETTLED_CALLS = "gateway-usage-settlement"

export interface FinishedCall {
  /** The `llm-usage` event's id, fixed once per call: a commit tried again cannot write the event twice. */
  readonly eventId: string
  readonly message: LlmUsageMessage
  readonly settlement: Settlement
}

/** A failure because the database cannot serve now (transaction failures are defects: `transactionOf`). */
const databaseUnavailable = (cause: Cause.Cause<unknown>) =>
  [...Cause.failures(cause), ...Cause.defects(cause)].some(isDatabaseUnavailable)

export class UsageWriter extends Effect.Service<UsageWriter>()("gateway/UsageWriter", {
  scoped: Effect.gen(function* () {
    const budgets = yield* Budgets
    const outbox = yield* Outbox
    const config = yield* AppConfig
    const sql = yield* SqlClient.SqlClient
    const transaction = transactionOf(sql)
    // While the database is out of reach a batch waits for it (new calls queue behind it), for at most
    // USAGE_RECORD_RETRY_SECONDS; any other failure is the batch's own and goes to `retryAlone` at once. Once the
    // service stops, every wait ends by SHUTDOWN_DRAIN_SECONDS from then, so a stop during an outage does not
    // wait on each queued batch in turn.
    const retryMillis = config.usageRecordRetrySeconds * 1000
    let stopBy = Number.POSITIVE_INFINITY
    const backoff = Schedule.exponential(Duration.millis(50)).pipe(Schedule.union(Schedule.spaced(Duration.seconds(2))))

    const commit = (calls: ReadonlyArray<FinishedCall>) =>
      Effect.suspend(() => {
        const giveUpAt = Date.now() + retryMillis
        return transaction(
          Effect.gen(function* () {
            // A commit whose acknowledgement was lost (the connection cut after COMMIT) is run again: calls it
            // recorded then are skipped, so no call's spend is added to the budget twice.
            const fresh = yield* recordFirstTime(
              SETTLED_CALLS,
              calls.map((call) => call.eventId)
            ).pipe(Effect.provideService(SqlClient.SqlClient, sql))
            const unsettled = calls.filter((call) => fresh.has(call.eventId))
            yield* outbox.enqueue(
              unsettled.map((call) => ({
                eventId: call.eventId,
                topic: Topics.llmUsage,
                key: call.message.workspace_id,
                value: encodeUsage(call.message)
              }))
            )
            yield* budgets.settle(unsettled.map((call) => call.settlement))
          })
        ).pipe(
          Effect.sandbox,
          Effect.tapError((cause) =>
            databaseUnavailable(cause)
              ? Effect.logWarning("gateway usage records wait for the database", cause)
              : Effect.void
          ),
          Effect.retry({
            schedule: backoff,
            while: (cause) => databaseUnavailable(cause) && Date.now() < Math.min(giveUpAt, stopBy)
          }),
          Effect.unsandbox,
          Effect.as(allCommitted(calls))
        )
      })

    // Nothing waits on a usage record (calls hand over after their response is out): a failed record is logged.
    // A batch holds many workspaces' calls, so a failed batch is committed call by call: one bad record loses
    // only itself.
    const writer = yield* makeGroupCommit({
      name: "gateway usage record",
      maxBatch: MAX_BATCH,
      linger: LINGER,
      retryAlone: true,
      commit
    })
    // Added last, so it runs first when the scope closes: before the writer stops and the queue is drained.
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        stopBy = Date.now() + config.shutdownDrainSeconds * 1000
      })
    )
    return writer
  }),
  dependencies: [Budgets.Default]
}) {}
