/**
 * Group commit for run-event appends. One transaction per append (row lock,
 * sequence bump, insert, outbox row, commit) caps throughput at the
 * database's commit rate, so appends queue up for one writer fiber that
 * commits whatever has queued (up to MAX_BATCH) together: it locks the
 * batch's runs, bumps each run's `last_sequence` by its number of events
 * and hands them consecutive sequences in arrival order, so sequences stay
 * gap-free and strictly increasing. An unknown run (404) or an ended run
 * (409) fails only its own append; if the batch's transaction fails, every
 * append is retried alone.
 */
import { SqlClient } from "@effect/sql"
import { Deferred, Effect, Exit, Queue, Schema } from "effect"
import { WorkspaceSettings } from "../identity/WorkspaceSettings.js"
import { Conflict, NotFound } from "../platform/Errors.js"
import { Outbox } from "../platform/Outbox.js"
import { transactionOf } from "../platform/Sql.js"
import { Topics } from "../platform/Topics.js"
import { type DataHandlingMode, keepJson, keepOptionalString } from "../privacy/Redaction.js"
import { RunEventKind, RunEventMessage, type RunKind } from "./Domain.js"

const encodeRunEventMessage = Schema.encodeSync(RunEventMessage)

const MAX_BATCH = 500

/** An append as the caller sent it (content is kept per data_handling_mode when written). */
export interface NewRunEvent {
  readonly id: string
  readonly workspaceId: string
  readonly runId: string
  readonly kind: string
  readonly label: string | null
  readonly inputSummary: string | null
  readonly outputSummary: string | null
  readonly metadata: unknown
  readonly occurredAt: Date
}

export interface RunEventRow {
  readonly id: string
  readonly run_id: string
  readonly workspace_id: string
  readonly sequence: number
  readonly kind: string
  readonly label: string | null
  readonly input_summary: string | null
  readonly output_summary: string | null
  readonly metadata: unknown
  readonly occurred_at: Date
  readonly created_at: Date
}

type Pending = readonly [NewRunEvent, Deferred.Deferred<RunEventRow, NotFound | Conflict>]

const TERMINAL: ReadonlySet<string> = new Set(["completed", "failed", "canceled"])

export const runNotFound = (id: string) =>
  new NotFound({ code: "run_not_found", message: `No run ${id} in this workspace.` })

export class RunEventWriter extends Effect.Service<RunEventWriter>()("runs/RunEventWriter", {
  scoped: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const transaction = transactionOf(sql)
    const outbox = yield* Outbox
    const settings = yield* WorkspaceSettings
    const queue = yield* Effect.acquireRelease(Queue.unbounded<Pending>(), Queue.shutdown)
    const runKey = (workspaceId: string, runId: string) => `${workspaceId}/${runId}`

    /** Commits the appends that may go ahead; answers each append's outcome, in batch order. */
    const commit = (batch: ReadonlyArray<NewRunEvent>) =>
      transaction(
        Effect.gen(function* () {
          const runIds = [...new Set(batch.map((event) => event.runId))]
          const workspaceIds = [...new Set(batch.map((event) => event.workspaceId))]
          const locked = yield* sql<{
            id: string
            workspace_id: string
            agent_id: string
            environment_id: string
            kind: RunKind
            status: string
          }>`
            select id, workspace_id, agent_id, environment_id, kind, status from runs
            where workspace_id in ${sql.in(workspaceIds)} and id in ${sql.in(runIds)} order by id for update`
          const runs = new Map(locked.map((run) => [runKey(run.workspace_id, run.id), run]))
          const outcomes: Array<Exit.Exit<RunEventRow, NotFound | Conflict>> = []
          const accepted: Array<{ readonly index: number; readonly event: NewRunEvent }> = []
          const counts = new Map<string, number>()
          batch.forEach((event, index) => {
            const run = runs.get(runKey(event.workspaceId, event.runId))
            if (run === undefined) outcomes[index] = Exit.fail(runNotFound(event.runId))
            else if (TERMINAL.has(run.status)) {
              outcomes[index] = Exit.fail(
                new Conflict({ code: "run_ended", message: `Run ${event.runId} is ${run.status}; it takes no more events.` })
              )
            } else {
              accepted.push({ index, event })
              counts.set(run.id, (counts.get(run.id) ?? 0) + 1)
            }
          })
          if (accepted.length === 0) return outcomes
          const bumped = yield* sql<{ id: string; last_sequence: number }>`
            update runs set last_sequence = runs.last_sequence + bump.count::int, updated_at = now()
            from ${sql.updateValues(
              [...counts].map(([id, count]) => ({ id, count })),
              "bump"
            )}
            where runs.id = bump.id returning runs.id, runs.last_sequence`
          // The run's new last sequence, minus its events in this batch, is where its batch starts.
          const next = new Map(bumped.map((run) => [run.id, run.last_sequence - counts.get(run.id)! + 1]))
          // Summaries and metadata are customer content: stored as each workspace's data_handling_mode allows
          // (read once per workspace per batch, after every append in it arrived).
          const modes = new Map<string, DataHandlingMode>()
          for (const { event } of accepted) {
            if (!modes.has(event.workspaceId)) {
              modes.set(event.workspaceId, (yield* settings.settingsOf(event.workspaceId)).data_handling_mode)
            }
          }
          const rows = accepted.map(({ event }) => {
            const sequence = next.get(event.runId)!
            next.set(event.runId, sequence + 1)
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
          const inserted = yield* sql<RunEventRow>`insert into run_events ${sql.insert(rows)} returning *`
          const byId = new Map(inserted.map((row) => [row.id, row]))
          yield* outbox.enqueue(
            accepted.map(({ event }) => {
              const row = byId.get(event.id)!
              const run = runs.get(runKey(event.workspaceId, event.runId))!
              return {
                topic: Topics.runEvents,
                key: event.runId,
                value: encodeRunEventMessage({
                  schema_version: 1,
                  event_id: row.id,
                  run_id: row.run_id,
                  workspace_id: row.workspace_id,
                  agent_id: run.agent_id,
                  environment_id: run.environment_id,
                  run_kind: run.kind,
                  kind: row.kind as typeof RunEventKind.Type,
                  sequence: row.sequence,
                  occurred_at: row.occurred_at.toISOString()
                })
              }
            })
          )
          for (const { index, event } of accepted) outcomes[index] = Exit.succeed(byId.get(event.id)!)
          return outcomes
        })
      )

    const writeBatch = (batch: ReadonlyArray<Pending>): Effect.Effect<void> =>
      commit(batch.map(([event]) => event)).pipe(
        Effect.flatMap((outcomes) =>
          Effect.forEach(batch, ([, done], index) => Deferred.complete(done, outcomes[index]!), { discard: true })
        ),
        Effect.catchAllCause((cause) =>
          batch.length === 1
            ? Deferred.failCause(batch[0]![1], cause)
            : Effect.forEach(batch, (pending) => writeBatch([pending]), { discard: true })
        )
      )

    yield* Queue.takeBetween(queue, 1, MAX_BATCH).pipe(
      Effect.flatMap((chunk) => writeBatch([...chunk])),
      Effect.forever,
      Effect.forkScoped
    )

    /** Appends one event: its stored row once committed, or the 404/409 that refused it. */
    const append = (event: NewRunEvent) =>
      Effect.flatMap(Deferred.make<RunEventRow, NotFound | Conflict>(), (done) =>
        Queue.offer(queue, [event, done]).pipe(Effect.zipRight(Deferred.await(done)))
      )

    return { append }
  })
}) {}
