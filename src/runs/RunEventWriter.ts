/**
 * Group commit for run-event appends (src/platform/GroupCommit.ts). One
 * transaction per append (row lock, sequence bump, insert, outbox row,
 * commit) caps throughput at the database's commit rate, so a batch of
 * appends commits together: it locks the batch's runs, bumps each run's `last_sequence` by its number of events
 * and hands them consecutive sequences in arrival order, so sequences stay
 * gap-free and strictly increasing. An unknown run (404) or an ended run
 * (409) fails only its own append; if the batch's transaction fails, every
 * append is retried alone.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Exit, Schema } from "effect"
import { WorkspaceSettings } from "../identity/WorkspaceSettings.js"
import { Conflict, NotFound } from "../http/Errors.js"
import { makeGroupCommit } from "../platform/GroupCommit.js"
import { type RunEventRow, RunsRepo } from "./Repo.js"
import { Outbox } from "../platform/Outbox.js"
import { transactionOf } from "../platform/Sql.js"
import { Topics } from "../platform/Topics.js"
import { type DataHandlingMode, keepJson, keepOptionalString } from "../privacy/Redaction.js"
import { RunEventKind, RunEventMessage } from "./Domain.js"

const encodeRunEventMessage = Schema.encodeSync(RunEventMessage)

const MAX_BATCH = 500

/** An append as the caller sent it (content is kept per data_handling_mode when written). */
export interface NewRunEvent {
  readonly id: string
  readonly workspaceId: string
  readonly runId: string
  readonly kind: typeof RunEventKind.Type
  readonly label: string | null
  readonly inputSummary: string | null
  readonly outputSummary: string | null
  readonly metadata: unknown
  readonly occurredAt: Date
}

/** An append's outcome: its stored row, the 404/409 that refused it, or a defect. */
export type AppendOutcome = Exit.Exit<RunEventRow, NotFound | Conflict>

const TERMINAL: ReadonlySet<string> = new Set(["completed", "failed", "canceled"])

export const runNotFound = (id: string) =>
  new NotFound({ code: "run_not_found", message: `No run ${id} in this workspace.` })

export class RunEventWriter extends Effect.Service<RunEventWriter>()("runs/RunEventWriter", {
  scoped: Effect.gen(function* () {
    const transaction = transactionOf(yield* SqlClient.SqlClient)
    const outbox = yield* Outbox
    const repo = yield* RunsRepo
    const settings = yield* WorkspaceSettings
    const runKey = (workspaceId: string, runId: string) => `${workspaceId}/${runId}`

    /** Commits the appends that may go ahead; answers each append's outcome, in batch order. */
    const commit = (batch: ReadonlyArray<NewRunEvent>) =>
      transaction(
        Effect.gen(function* () {
          const counts = new Map<string, { id: string; workspace_id: string; count: number }>()
          for (const event of batch) {
            const key = runKey(event.workspaceId, event.runId)
            const entry = counts.get(key)
            if (entry === undefined) counts.set(key, { id: event.runId, workspace_id: event.workspaceId, count: 1 })
            else entry.count += 1
          }
          const locked = yield* repo.lockAndBump([...counts.values()], [...TERMINAL])
          const runs = new Map(locked.map((run) => [runKey(run.workspace_id, run.id), run]))
          const outcomes: Array<Exit.Exit<RunEventRow, NotFound | Conflict>> = []
          const accepted: Array<{ readonly index: number; readonly event: NewRunEvent }> = []
          // The run's new last sequence, minus its events in this batch, is where its batch starts.
          const next = new Map<string, number>()
          batch.forEach((event, index) => {
            const key = runKey(event.workspaceId, event.runId)
            const run = runs.get(key)
            if (run === undefined) outcomes[index] = Exit.fail(runNotFound(event.runId))
            // An ended run was locked but not bumped.
            else if (run.last_sequence === null) {
              outcomes[index] = Exit.fail(
                new Conflict({
                  code: "run_ended",
                  message: `Run ${event.runId} is ${run.status}; it takes no more events.`
                })
              )
            } else {
              accepted.push({ index, event })
              if (!next.has(key)) next.set(key, run.last_sequence - counts.get(key)!.count + 1)
            }
          })
          if (accepted.length === 0) return outcomes
          // Summaries and metadata are customer content: stored as each workspace's data_handling_mode allows
          // (read once per workspace per batch, after every append in it arrived).
          const modes = new Map<string, DataHandlingMode>()
          for (const { event } of accepted) {
            if (!modes.has(event.workspaceId)) {
              modes.set(
                event.workspaceId,
                (yield* settings.runtimeConfig(event.workspaceId)).settings.data_handling_mode
              )
            }
          }
          const rows = accepted.map(({ event }) => {
            const key = runKey(event.workspaceId, event.runId)
            const sequence = next.get(key)!
            next.set(key, sequence + 1)
            const mode = modes.get(event.workspaceId)!
            return {
              id: event.id,
              run_id: event.runId,
              workspace_id: event.workspaceId,
              sequence,
              kind: event.kind,
              label: event.label,
              input_summary: keepOptionalString(mode, event.inputSummary),
              output_summary: keepOptionalString(mode, event.outputSummary),
              metadata: JSON.stringify(keepJson(mode, event.metadata)),
              occurred_at: event.occurredAt
            }
          })
          const messages = rows.map((row) => {
            const run = runs.get(runKey(row.workspace_id, row.run_id))!
            return {
              topic: Topics.runEvents,
              key: row.run_id,
              value: encodeRunEventMessage({
                schema_version: 1,
                event_id: row.id,
                run_id: row.run_id,
                workspace_id: row.workspace_id,
                agent_id: run.agent_id,
                environment_id: run.environment_id,
                run_kind: run.kind,
                kind: row.kind,
                sequence: row.sequence,
                occurred_at: row.occurred_at.toISOString()
              })
            }
          })
          const inserted = yield* repo.insertEvents(rows, messages)
          const byId = new Map(inserted.map((row) => [row.id, row]))
          for (const { index, event } of accepted) outcomes[index] = Exit.succeed(byId.get(event.id)!)
          return outcomes
        })
      ).pipe(Effect.tap((outcomes) => (outcomes.some(Exit.isSuccess) ? outbox.written.fire : Effect.void)))

    return yield* makeGroupCommit({ name: "run event", maxBatch: MAX_BATCH, retryAlone: true, commit })
  }),
  dependencies: [RunsRepo.Default]
}) {}
