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
import { Conflict, Forbidden, NotFound } from "../http/Errors.js"
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
  /** The appending caller's bound environment (a runtime key's): the run must be in it. Null: any run. */
  readonly environmentId: string | null
  readonly kind: typeof RunEventKind.Type
  readonly label: string | null
  readonly inputSummary: string | null
  readonly outputSummary: string | null
  readonly metadata: unknown
  readonly occurredAt: Date
}

/** An append's outcome: its stored row, the 403/404/409 that refused it, or a defect. */
export type AppendOutcome = Exit.Exit<RunEventRow, Forbidden | NotFound | Conflict>

const TERMINAL: ReadonlySet<string> = new Set(["completed", "failed", "canceled"])

export const runNotFound = (id: string) =>
  new NotFound({ code: "run_not_found", message: `No run ${id} in this workspace.` })

/** 403 for a runtime key bound to `environmentId` acting on `what`, which is in another environment. */
export const environmentMismatch = (environmentId: string, what: string) =>
  new Forbidden({
    code: "environment_mismatch",
    message: `This runtime key is bound to environment ${environmentId}; ${what} is in another.`
  })

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
          // Events per run and required environment ("" for any): the bump counts those the run's allows.
          const counts = new Map<string, { id: string; workspace_id: string; environment_id: string; count: number }>()
          for (const event of batch) {
            const environment_id = event.environmentId ?? ""
            const key = `${runKey(event.workspaceId, event.runId)}/${environment_id}`
            const entry = counts.get(key)
            if (entry !== undefined) entry.count += 1
            else counts.set(key, { id: event.runId, workspace_id: event.workspaceId, environment_id, count: 1 })
          }
          const locked = yield* repo.lockAndBump([...counts.values()], [...TERMINAL])
          const runs = new Map(locked.map((run) => [runKey(run.workspace_id, run.id), run]))
          const outcomes: Array<AppendOutcome> = []
          const accepted: Array<{ readonly index: number; readonly event: NewRunEvent }> = []
          const acceptedPerRun = new Map<string, number>()
          batch.forEach((event, index) => {
            const key = runKey(event.workspaceId, event.runId)
            const run = runs.get(key)
            if (run === undefined) outcomes[index] = Exit.fail(runNotFound(event.runId))
            // A runtime key appends only to runs of its own environment; its events were not counted in the bump.
            else if (event.environmentId !== null && event.environmentId !== run.environment_id) {
              outcomes[index] = Exit.fail(environmentMismatch(event.environmentId, `run ${event.runId}`))
            }
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
              acceptedPerRun.set(key, (acceptedPerRun.get(key) ?? 0) + 1)
            }
          })
          if (accepted.length === 0) return outcomes
          // The run's new last sequence, minus its events accepted in this batch, is where its batch starts.
          const next = new Map<string, number>()
          for (const [key, count] of acceptedPerRun) next.set(key, runs.get(key)!.last_sequence! - count + 1)
          // Summaries and metadata are customer content: stored as each workspace's data_handling_mode allows
          // (read once per workspace per batch, after every append in it arrived).
          const modes = new Map<string, DataHandlingMode>()
          for (const { event } of accepted) {
            if (!modes.has(event.workspaceId)) {
              modes.set(event.workspaceId, yield* settings.dataHandlingMode(event.workspaceId))
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
