/**
 * SQL of runs and their events, rows decoded by Schema. Every query takes
 * the workspace id. Appends go through `lockAndBump` and `insertEvents`,
 * which the run-event group commit runs in one transaction per batch.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import type { OutboxEvent } from "../platform/Outbox.js"
import { Outbox } from "../platform/Outbox.js"
import { CutColumns, cutAtBytes, cutPage, wasCut } from "../platform/PageBytes.js"
import { dieOnErrors } from "../platform/Sql.js"
import { RunEventKind, RunKind, RunStatus } from "./Domain.js"

export const RunRow = Schema.Struct({
  id: Schema.String,
  workspace_id: Schema.String,
  agent_id: Schema.String,
  environment_id: Schema.String,
  environment: Schema.String,
  external_id: Schema.NullOr(Schema.String),
  kind: RunKind,
  status: RunStatus,
  metadata: Schema.Unknown,
  blocked_count: Schema.Number,
  escalated_count: Schema.Number,
  rewritten_count: Schema.Number,
  trace_count: Schema.Number,
  p95_latency_ms: Schema.Number,
  created_at: Schema.DateFromSelf,
  started_at: Schema.NullOr(Schema.DateFromSelf),
  ended_at: Schema.NullOr(Schema.DateFromSelf),
  updated_at: Schema.DateFromSelf
})
export type RunRow = typeof RunRow.Type

export const RunEventRow = Schema.Struct({
  id: Schema.String,
  run_id: Schema.String,
  workspace_id: Schema.String,
  sequence: Schema.Number,
  kind: RunEventKind,
  label: Schema.NullOr(Schema.String),
  input_summary: Schema.NullOr(Schema.String),
  output_summary: Schema.NullOr(Schema.String),
  metadata: Schema.Unknown,
  occurred_at: Schema.DateFromSelf,
  created_at: Schema.DateFromSelf
})
export type RunEventRow = typeof RunEventRow.Type

/** A run of an append batch, locked: `last_sequence` is its bumped sequence, null when it has ended (not bumped). */
const LockedRun = Schema.Struct({
  id: Schema.String,
  workspace_id: Schema.String,
  agent_id: Schema.String,
  environment_id: Schema.String,
  kind: RunKind,
  status: RunStatus,
  last_sequence: Schema.NullOr(Schema.Number)
})
export type LockedRun = typeof LockedRun.Type

export interface RunFilters {
  readonly agent_id?: string | undefined
  readonly status?: string | undefined
  readonly kind?: string | undefined
  readonly external_id?: string | undefined
}

export type NewRun = Omit<
  RunRow,
  | "blocked_count"
  | "escalated_count"
  | "rewritten_count"
  | "trace_count"
  | "p95_latency_ms"
  | "created_at"
  | "updated_at"
  | "ended_at"
>

/** A stored run event as inserted (content already kept per the workspace's data handling mode). */
export type EventInsert = {
  readonly id: string
  readonly run_id: string
  readonly workspace_id: string
  readonly sequence: number
  readonly kind: string
  readonly label: string | null
  readonly input_summary: string | null
  readonly output_summary: string | null
  readonly metadata: string
  readonly occurred_at: Date
}

const decodeRuns = Schema.decodeUnknown(Schema.Array(RunRow))
const decodeEvents = Schema.decodeUnknown(Schema.Array(RunEventRow))
const decodePagedEvents = Schema.decodeUnknown(Schema.Array(Schema.extend(RunEventRow, CutColumns)))
/** What an event weighs in a page: its client-sent text. */
const EVENT_BYTES_SQL = `octet_length(metadata::text) + coalesce(octet_length(input_summary), 0)
  + coalesce(octet_length(output_summary), 0)`
const decodeLocked = Schema.decodeUnknown(Schema.Array(LockedRun))
const first = <A>(rows: ReadonlyArray<A>) => Option.fromNullable(rows[0])
const json = (value: unknown) => JSON.stringify(value ?? null)

export class RunsRepo extends Effect.Service<RunsRepo>()("runs/RunsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const EVENT_BYTES = sql.unsafe(EVENT_BYTES_SQL)
    const outbox = yield* Outbox

    return dieOnErrors({
      insert: (row: NewRun) =>
        sql`insert into runs (id, workspace_id, agent_id, environment_id, environment, external_id, kind, status,
                              metadata, started_at)
            values (${row.id}, ${row.workspace_id}, ${row.agent_id}, ${row.environment_id}, ${row.environment},
                    ${row.external_id}, ${row.kind}, ${row.status}, ${json(row.metadata)}, ${row.started_at})
            returning *`.pipe(
          Effect.flatMap(decodeRuns),
          Effect.map((rows) => rows[0]!)
        ),
      find: (workspaceId: string, id: string, lock = false) =>
        sql`select * from runs where workspace_id = ${workspaceId} and id = ${id}
            ${lock ? sql`for update` : sql``}`.pipe(Effect.flatMap(decodeRuns), Effect.map(first)),
      list: (
        workspaceId: string,
        filters: RunFilters,
        limit: number,
        after: Option.Option<{ readonly at: string; readonly id: string }>
      ) =>
        sql`select * from runs where workspace_id = ${workspaceId}
          ${filters.agent_id === undefined ? sql`` : sql`and agent_id = ${filters.agent_id}`}
          ${filters.status === undefined ? sql`` : sql`and status = ${filters.status}`}
          ${filters.kind === undefined ? sql`` : sql`and kind = ${filters.kind}`}
          ${filters.external_id === undefined ? sql`` : sql`and external_id = ${filters.external_id}`}
          ${Option.isNone(after) ? sql`` : sql`and (created_at, id) < (${after.value.at}::timestamptz, ${after.value.id})`}
          order by created_at desc, id desc limit ${limit + 1}`.pipe(Effect.flatMap(decodeRuns)),
      update: (workspaceId: string, id: string, values: Record<string, unknown>) =>
        sql`update runs set ${sql.update(values)}, updated_at = now()
            where workspace_id = ${workspaceId} and id = ${id} returning *`.pipe(
          Effect.flatMap(decodeRuns),
          Effect.map((rows) => rows[0]!)
        ),
      /**
       * Up to `limit` events after `afterSequence`, cut after the one that brings the page to `maxBytes`
       * (`cutAtBytes`); `more` when events follow the page.
       */
      listEvents: (workspaceId: string, runId: string, limit: number, afterSequence: number, maxBytes: number) =>
        cutAtBytes(
          sql,
          sql`select * from run_events where workspace_id = ${workspaceId} and run_id = ${runId}
               and sequence > ${afterSequence} order by sequence limit ${limit + 1}`,
          sql`sequence`,
          EVENT_BYTES,
          maxBytes
        ).pipe(
          Effect.flatMap(decodePagedEvents),
          Effect.map((rows) => cutPage(rows, limit))
        ),

      /**
       * The events within `limit` of the event `eventId` on each side, that event included, by sequence, each
       * side cut at `maxBytesPerSide` (`cutAtBytes`, nearest the event first); none when the run has no such
       * event (the second part always holds it otherwise). `laterCut`: the budget left out later events.
       */
      listEventsAround: (
        workspaceId: string,
        runId: string,
        eventId: string,
        limit: number,
        maxBytesPerSide: number
      ) => {
        const target = sql`(select sequence from run_events
                            where workspace_id = ${workspaceId} and run_id = ${runId} and id = ${eventId})`
        const ofRun = sql`select * from run_events where workspace_id = ${workspaceId} and run_id = ${runId}`
        const earlier = cutAtBytes(
          sql,
          sql`${ofRun} and sequence < ${target} order by sequence desc limit ${limit}`,
          sql`sequence desc`,
          EVENT_BYTES,
          maxBytesPerSide
        )
        const later = cutAtBytes(
          sql,
          sql`${ofRun} and sequence >= ${target} order by sequence limit ${limit + 1}`,
          sql`sequence`,
          EVENT_BYTES,
          maxBytesPerSide
        )
        return Effect.all([earlier, later]).pipe(
          Effect.flatMap(([before, after]) => Effect.all([decodePagedEvents(before), decodePagedEvents(after)])),
          Effect.map(([before, after]) => ({ rows: [...before].reverse().concat(after), laterCut: wasCut(after) }))
        )
      },

      /**
       * One round trip: locks the runs of an append batch by workspace, then id: the order the run counters
       * (RunCounters.ts) lock theirs in, so neither waits on the other in a cycle (a deadlock PostgreSQL ends after
       * a second by aborting one),
       * then bumps each open run's last_sequence by its number of events in the batch that may go in: those
       * whose `environment_id` is empty (any run) or the run's. Runs not found are absent; ended ones are
       * locked but not bumped (`last_sequence` null), and so are runs none of whose events may go in.
       */
      lockAndBump: (
        counts: ReadonlyArray<{
          readonly id: string
          readonly workspace_id: string
          readonly environment_id: string
          readonly count: number
        }>,
        terminal: ReadonlyArray<string>
      ) =>
        sql`with locked as (
              select id, workspace_id, agent_id, environment_id, kind, status from runs
              where workspace_id in ${sql.in([...new Set(counts.map((run) => run.workspace_id))])}
                and id in ${sql.in([...new Set(counts.map((run) => run.id))])} order by workspace_id, id for update
            ), bump as (
              select b.id, b.workspace_id, sum(b.count::int)::int as count
              from ${sql.updateValues([...counts], "b")}
              join locked on locked.id = b.id and locked.workspace_id = b.workspace_id
              where b.environment_id = '' or b.environment_id = locked.environment_id
              group by b.id, b.workspace_id
            ), bumped as (
              update runs set last_sequence = runs.last_sequence + bump.count, updated_at = now()
              from bump, locked
              where runs.id = bump.id and runs.workspace_id = bump.workspace_id
                and locked.id = runs.id and locked.workspace_id = runs.workspace_id
                and locked.status not in ${sql.in([...terminal])}
              returning runs.id, runs.workspace_id, runs.last_sequence
            )
            select locked.*, bumped.last_sequence from locked
            left join bumped on bumped.id = locked.id and bumped.workspace_id = locked.workspace_id`.pipe(
          Effect.flatMap(decodeLocked)
        ),

      /** The events and their outbox rows, in one statement. */
      insertEvents: (rows: ReadonlyArray<EventInsert>, messages: ReadonlyArray<OutboxEvent>) =>
        sql`with inserted as (insert into run_events ${sql.insert([...rows])} returning *),
                 queued as (${outbox.insertStatement(messages)})
            select * from inserted`.pipe(Effect.flatMap(decodeEvents))
    })
  })
}) {}
