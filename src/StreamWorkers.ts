/**
 * The stream worker's consumers, each a layer beside its domain that forks
 * its consumer for the life of the layer. Domains add theirs here.
 */
import type { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import type { EventLog } from "./platform/EventLog.js"
import type { ChangeNotices } from "./platform/ChangeNotices.js"
import type { AppConfig } from "./platform/Config.js"
import type { Outbox } from "./platform/Outbox.js"
import type { Secrets } from "./platform/Secrets.js"
import { ActionMeterWorkerLive, BudgetWebhooksWorkerLive, LlmUsageWorkerLive } from "./billing/Workers.js"
import { RetentionLive } from "./operations/Retention.js"
import { AuditRetentionLive } from "./audit/Retention.js"
import { RunCountersLive } from "./runs/RunCounters.js"
import { JobRunnerLive } from "./redteam/JobRunner.js"
import { AnalyticsConsumerLive } from "./analytics/Ingest.js"
import { ImpactRunnerLive } from "./impact/Runner.js"

const consumers: ReadonlyArray<{
  readonly name: string
  readonly layer: Layer.Layer<
    never,
    never,
    SqlClient.SqlClient | EventLog | AppConfig | Outbox | Secrets | ChangeNotices
  >
}> = [
  { name: "run-counters", layer: RunCountersLive },
  { name: "retention", layer: RetentionLive },
  { name: "audit-retention", layer: AuditRetentionLive },
  { name: "redteam-jobs", layer: JobRunnerLive },
  { name: "impact-replay", layer: ImpactRunnerLive },
  { name: "analytics", layer: AnalyticsConsumerLive },
  { name: "llm-usage-store", layer: LlmUsageWorkerLive },
  { name: "budget-actions", layer: ActionMeterWorkerLive },
  { name: "budget-webhooks", layer: BudgetWebhooksWorkerLive }
]

export const StreamWorkersLive = Layer.mergeAll(
  Layer.effectDiscard(
    Effect.logInfo("stream worker started").pipe(
      Effect.annotateLogs({ consumers: consumers.map((consumer) => consumer.name) })
    )
  ),
  ...consumers.map((consumer) => consumer.layer)
)
