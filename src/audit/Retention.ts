/**
 * Audit retention, a task of the stream worker: with AUDIT_RETENTION_DAYS set
 * (> 0), rows older than that are pruned behind a signed checkpoint
 * (`AuditLog.prune`), so verification still holds. Unset or 0 (the default):
 * audit rows are kept for good. It is separate from the workspaces'
 * `retention_days`, since an audit trail usually must outlive operational data.
 */
import { Clock, Duration, Effect, Layer } from "effect"
import { every } from "../platform/Background.js"
import { AppConfig, AuditRetentionDays } from "../platform/Config.js"
import { AuditLog } from "./AuditLog.js"

const DAY_MILLIS = 24 * 60 * 60 * 1000

export const AuditRetentionLive = Layer.scopedDiscard(
  Effect.gen(function* () {
    const days = yield* Effect.orDie(AuditRetentionDays)
    if (days === 0) return
    const config = yield* AppConfig
    const audit = yield* AuditLog
    const prune = Clock.currentTimeMillis.pipe(
      Effect.flatMap((now) => audit.prune(new Date(now - days * DAY_MILLIS), config.retentionBatchSize)),
      Effect.tap((deleted) =>
        (deleted > 0 ? Effect.logInfo : Effect.logDebug)("audit prune").pipe(Effect.annotateLogs({ deleted }))
      )
    )
    yield* Effect.forkScoped(every("audit prune", Duration.seconds(config.retentionIntervalSeconds), prune))
  })
).pipe(Layer.provide(AuditLog.Default))
