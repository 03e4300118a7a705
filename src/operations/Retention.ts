/**
 * retention_days: a task of the stream worker that deletes each workspace's
 * records older than its retention, in bounded batches (one short statement
 * per batch, yielding between them, so it never holds long locks or starves
 * other work). Aggregates (runs and their counters, analytics buckets,
 * budget ledgers) are not in the list and stay. Time comes from effect's
 * `Clock`, so a test drives the schedule with `TestClock`.
 *
 * Other domains extend `retentionTargets` (or call `addRetentionTarget`) with
 * their event tables; a target whose table does not exist is skipped.
 */
import { Clock, Duration, Effect, Layer } from "effect"
import { every } from "../platform/Background.js"
import { AppConfig } from "../platform/Config.js"
import { pruneEventPlumbing, type PruneWindows } from "./EventPruning.js"
import { deleteExpiredBatch, presentTables, workspaceRetentions } from "./Repo.js"

export interface RetentionTarget {
  readonly table: string
  /** The timestamp column that dates a record. */
  readonly timeColumn: string
  /** The column naming the owning workspace. */
  readonly workspaceColumn: string
}

/** Review events first (they hang off traces), then traces and their receipts, run events, usage, attacks, fingerprints. */
export const retentionTargets: Array<RetentionTarget> = [
  { table: "review_events", timeColumn: "created_at", workspaceColumn: "workspace_id" },
  { table: "traces", timeColumn: "created_at", workspaceColumn: "workspace_id" },
  { table: "receipts", timeColumn: "created_at", workspaceColumn: "workspace_id" },
  { table: "run_events", timeColumn: "created_at", workspaceColumn: "workspace_id" },
  { table: "llm_usage_events", timeColumn: "effective_at", workspaceColumn: "workspace_id" },
  { table: "redteam_attacks", timeColumn: "created_at", workspaceColumn: "workspace_id" },
  // Provenance fingerprints last as long as the run events and traces of their run or session.
  { table: "provenance_fingerprints", timeColumn: "first_seen_at", workspaceColumn: "workspace_id" }
]

export const addRetentionTarget = (target: RetentionTarget) => {
  if (!retentionTargets.some((existing) => existing.table === target.table)) retentionTargets.push(target)
}

export interface RetentionOptions {
  readonly batchSize: number
  readonly interval: Duration.DurationInput
  /** Also prune dedupe records and the database event log (EventPruning.ts). */
  readonly eventPlumbing?: Omit<PruneWindows, "batchSize">
}

export interface SweepReport {
  /** The clock's time the sweep measured ages against. */
  readonly at: Date
  /** Rows deleted per table. */
  readonly deleted: Readonly<Record<string, number>>
  /** Delete statements run (each at most `batchSize` rows). */
  readonly batches: number
  /** Workspaces whose deletes failed this sweep (logged; the sweep went on with the next workspace). */
  readonly failed: number
}

const DAY_MILLIS = 24 * 60 * 60 * 1000

/** One pass over every workspace and target. */
export const sweep = Effect.fn("Retention.sweep")(function* (batchSize: number) {
  const now = yield* Clock.currentTimeMillis
  const present = yield* presentTables(retentionTargets.map((target) => target.table))
  const targets = retentionTargets.filter((target) => present.includes(target.table))
  const workspaces = yield* workspaceRetentions
  const deleted: Record<string, number> = Object.fromEntries(targets.map((target) => [target.table, 0]))
  let batches = 0
  let failed = 0
  for (const workspace of workspaces) {
    const days = Number(workspace.retention_days)
    if (!Number.isSafeInteger(days) || days <= 0) continue
    const cutoff = new Date(now - days * DAY_MILLIS)
    // One workspace's failure (a statement timeout, a refused delete) is logged and the sweep goes on: it ended
    // the whole sweep, and the workspaces after it in the order were never swept while it kept failing.
    yield* Effect.gen(function* () {
      for (const target of targets) {
        while (true) {
          const count = yield* deleteExpiredBatch(target, workspace.workspace_id, cutoff, batchSize)
          batches++
          deleted[target.table] = (deleted[target.table] ?? 0) + count
          if (count < batchSize) break
          // Let other fibers (and other transactions) in between batches.
          yield* Effect.yieldNow()
        }
      }
    }).pipe(
      Effect.catchAll((error) => {
        failed++
        return Effect.logWarning("retention sweep: a workspace's deletes failed", error).pipe(
          Effect.annotateLogs({ workspace_id: workspace.workspace_id })
        )
      })
    )
  }
  return { at: new Date(now), deleted, batches, failed } satisfies SweepReport
})

/** Sweeps now and then every `interval`, forever; a failed sweep is logged and the schedule goes on. */
export const retentionLoop = (
  options: RetentionOptions,
  onSweep: (report: SweepReport) => Effect.Effect<void> = () => Effect.void
) =>
  every(
    "retention sweep",
    options.interval,
    sweep(options.batchSize).pipe(
      Effect.flatMap((report) =>
        options.eventPlumbing === undefined
          ? Effect.succeed(report)
          : Effect.map(
              pruneEventPlumbing({ ...options.eventPlumbing, batchSize: options.batchSize }),
              (pruned): SweepReport => ({ ...report, deleted: { ...report.deleted, ...pruned } })
            )
      ),
      Effect.tap((report) =>
        (Object.values(report.deleted).some((count) => count > 0) ? Effect.logInfo : Effect.logDebug)(
          "retention sweep"
        ).pipe(Effect.annotateLogs({ deleted: report.deleted, batches: report.batches, failed: report.failed }))
      ),
      Effect.tap(onSweep)
    )
  )

/** The stream worker's retention task, forked for the life of the layer. */
export const RetentionLive = Layer.scopedDiscard(
  Effect.gen(function* () {
    const config = yield* AppConfig
    yield* Effect.forkScoped(
      retentionLoop({
        batchSize: config.retentionBatchSize,
        interval: Duration.seconds(config.retentionIntervalSeconds),
        eventPlumbing: {
          processedEventsHours: config.processedEventsRetentionHours,
          eventLogHours: config.eventLogRetentionHours
        }
      })
    )
  })
)
