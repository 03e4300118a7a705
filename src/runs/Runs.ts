/**
 * Runs and their ordered events. Status moves warming -> running ->
 * completed | failed | canceled; a terminal run moves no more (409) and
 * takes no more events. Appends are group-committed by RunEventWriter, which
 * takes the runs' row locks to hand out the next sequences, so sequences are
 * gap-free and strictly increasing however many appends race.
 */
import { SqlClient } from "@effect/sql"
import { absurd, Effect, Either, Exit, Option } from "effect"
import type { Caller } from "../identity/Authentication.js"
import { WorkspaceSettings } from "../identity/WorkspaceSettings.js"
import { decodeCursor, encodeCursor, invalidCursor, pageByTime } from "../platform/Cursor.js"
import { BadRequest, Conflict, type HttpError, NotFound } from "../http/Errors.js"
import { type Answer, hotUseCase, ready, refused, type WarmSteps } from "../platform/Warm.js"
import { prefixedId } from "../platform/Ids.js"
import { toTimestamp, toTimestampOrNull } from "../platform/Schemas.js"
import { dieOnErrors, orFailWith, transactionOf } from "../platform/Sql.js"
import { RunId } from "./Domain.js"
import { newRunEvent, type RunEventInput, toRunEvent } from "./RunEvents.js"
import { type NewRunEvent } from "./RunEventWriter.js"
import { type RunEventRow, RunEventWriter, runNotFound } from "./RunEventWriter.js"
import { Traces } from "./Traces.js"

type RunStatus = "warming" | "running" | "completed" | "failed" | "canceled"
type RunKind = "chat_session" | "live_call" | "workflow" | "job" | "other"

interface RunRow {
  readonly id: string
  readonly workspace_id: string
  readonly agent_id: string
  readonly environment_id: string
  readonly environment: string
  readonly external_id: string | null
  readonly kind: string
  readonly status: string
  readonly metadata: unknown
  readonly blocked_count: number
  readonly escalated_count: number
  readonly rewritten_count: number
  readonly trace_count: number
  readonly p95_latency_ms: number
  readonly created_at: Date
  readonly started_at: Date | null
  readonly ended_at: Date | null
  readonly updated_at: Date
}

const TERMINAL: ReadonlySet<string> = new Set(["completed", "failed", "canceled"])

const toRun = (row: RunRow) => ({
  id: RunId.make(row.id),
  agent_id: row.agent_id,
  workspace_id: row.workspace_id,
  environment: row.environment,
  environment_id: row.environment_id,
  external_id: row.external_id,
  kind: row.kind as RunKind,
  status: row.status as RunStatus,
  blocked_count: row.blocked_count,
  escalated_count: row.escalated_count,
  rewritten_count: row.rewritten_count,
  trace_count: row.trace_count,
  p95_latency_ms: row.p95_latency_ms,
  metadata: row.metadata,
  created_at: toTimestamp(row.created_at),
  started_at: toTimestampOrNull(row.started_at),
  ended_at: toTimestampOrNull(row.ended_at),
  updated_at: toTimestamp(row.updated_at)
})

export interface RunFilters {
  readonly agent_id?: string | undefined
  readonly status?: string | undefined
  readonly kind?: string | undefined
  readonly external_id?: string | undefined
}

/** An append: the event for run `runId` of the workspace. */
export interface AppendRequest {
  readonly workspaceId: string
  readonly runId: string
  readonly input: RunEventInput
}

type RunEvent = ReturnType<typeof toRunEvent>

export class Runs extends Effect.Service<Runs>()("runs/Runs", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const transaction = transactionOf(sql)
    const settings = yield* WorkspaceSettings
    const traces = yield* Traces
    const writer = yield* RunEventWriter
    const json = (value: unknown) => JSON.stringify(value ?? null)

    const repo = dieOnErrors({
      insert: (
        row: Omit<
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
      ) =>
        sql<RunRow>`insert into runs (id, workspace_id, agent_id, environment_id, environment, external_id, kind, status,
                                      metadata, started_at)
          values (${row.id}, ${row.workspace_id}, ${row.agent_id}, ${row.environment_id}, ${row.environment},
                  ${row.external_id}, ${row.kind}, ${row.status}, ${json(row.metadata)}, ${row.started_at})
          returning *`.pipe(Effect.map((rows) => rows[0]!)),
      find: (workspaceId: string, id: string, lock = false) =>
        sql<RunRow>`select * from runs where workspace_id = ${workspaceId} and id = ${id}
                    ${lock ? sql`for update` : sql``}`.pipe(Effect.map((rows) => Option.fromNullable(rows[0]))),
      list: (
        workspaceId: string,
        filters: RunFilters,
        limit: number,
        after: Option.Option<{ readonly at: string; readonly id: string }>
      ) =>
        sql<RunRow>`select * from runs where workspace_id = ${workspaceId}
          ${filters.agent_id === undefined ? sql`` : sql`and agent_id = ${filters.agent_id}`}
          ${filters.status === undefined ? sql`` : sql`and status = ${filters.status}`}
          ${filters.kind === undefined ? sql`` : sql`and kind = ${filters.kind}`}
          ${filters.external_id === undefined ? sql`` : sql`and external_id = ${filters.external_id}`}
          ${Option.isNone(after) ? sql`` : sql`and (created_at, id) < (${after.value.at}::timestamptz, ${after.value.id})`}
          order by created_at desc, id desc limit ${limit + 1}`,
      update: (workspaceId: string, id: string, values: Record<string, unknown>) =>
        sql<RunRow>`update runs set ${sql.update(values)}, updated_at = now()
                    where workspace_id = ${workspaceId} and id = ${id} returning *`.pipe(
          Effect.map((rows) => rows[0]!)
        ),
      listEvents: (workspaceId: string, runId: string, limit: number, afterSequence: number) =>
        sql<RunEventRow>`select * from run_events where workspace_id = ${workspaceId} and run_id = ${runId}
                         and sequence > ${afterSequence} order by sequence limit ${limit + 1}`
    })

    const find = (workspaceId: string, id: string) => repo.find(workspaceId, id).pipe(orFailWith(() => runNotFound(id)))

    const create = (
      caller: Caller,
      input: {
        readonly agent_id: string
        readonly kind: RunKind
        readonly external_id?: string | undefined
        readonly status?: RunStatus | undefined
        readonly environment_id?: string | undefined
        readonly metadata?: unknown
      }
    ) =>
      Effect.gen(function* () {
        const status = input.status ?? "running"
        if (TERMINAL.has(status)) {
          return yield* new BadRequest({
            code: "validation_failed",
            message: "status: a run starts warming or running",
            details: [{ path: "status", message: "a run starts warming or running" }]
          })
        }
        const config = yield* settings.runtimeConfig(caller.workspaceId)
        const environmentId =
          input.environment_id ??
          caller.environmentId ??
          [...config.environments].find(([, environment]) => environment.isDefault)?.[0]
        const environment = environmentId === undefined ? undefined : config.environments.get(environmentId)
        if (environmentId === undefined || environment === undefined) {
          return yield* new NotFound({
            code: "environment_not_found",
            message: `Environment ${input.environment_id ?? ""} does not exist in this workspace.`
          })
        }
        const row = yield* repo.insert({
          id: prefixedId("run"),
          workspace_id: caller.workspaceId,
          agent_id: input.agent_id,
          environment_id: environmentId,
          environment: environment.slug,
          external_id: input.external_id ?? null,
          kind: input.kind,
          status,
          metadata: input.metadata ?? null,
          started_at: status === "running" ? new Date() : null
        })
        return toRun(row)
      })

    const list = (workspaceId: string, filters: RunFilters, limit: number, cursor: string | undefined) =>
      Effect.gen(function* () {
        const { next, page } = yield* pageByTime(cursor, limit, (after) =>
          repo.list(workspaceId, filters, limit, after)
        )
        return { runs: page.map(toRun), ...next }
      })

    const update = (
      workspaceId: string,
      id: string,
      patch: {
        readonly status?: RunStatus | undefined
        readonly external_id?: string | null | undefined
        readonly metadata?: unknown
      }
    ) =>
      transaction(
        Effect.gen(function* () {
          const current = Option.getOrUndefined(yield* repo.find(workspaceId, id, true))
          if (current === undefined) return yield* runNotFound(id)
          const values: Record<string, unknown> = {}
          if (patch.status !== undefined && patch.status !== current.status) {
            if (TERMINAL.has(current.status) || (patch.status === "warming" && current.status === "running")) {
              return yield* new Conflict({
                code: "invalid_transition",
                message: `A ${current.status} run cannot move to ${patch.status}.`
              })
            }
            values["status"] = patch.status
            if (patch.status === "running" && current.started_at === null) values["started_at"] = new Date()
            if (TERMINAL.has(patch.status)) values["ended_at"] = new Date()
          }
          if (patch.external_id !== undefined) values["external_id"] = patch.external_id
          if (patch.metadata !== undefined) values["metadata"] = json(patch.metadata)
          return toRun(Object.keys(values).length === 0 ? current : yield* repo.update(workspaceId, id, values))
        })
      )

    /**
     * Appends one event to a run: the event is checked from memory (a bad `occurred_at` is refused), then
     * handed to the group-committing writer, which answers the stored event or the 404/409 that refused it.
     */
    const appendRunEvent = hotUseCase({
      initial: undefined,
      steps: (request: AppendRequest): WarmSteps<undefined, NewRunEvent, HttpError, never, HttpError, never> => ({
        step: () =>
          Either.match(newRunEvent(request.workspaceId, request.runId, request.input), {
            onLeft: refused,
            onRight: ready
          }),
        load: absurd
      }),
      act: (_, event, answer: Answer<RunEvent, HttpError>) =>
        writer.enqueue(event, (outcome) => answer(Exit.map(outcome, toRunEvent)))
    })

    const events = (workspaceId: string, runId: string, limit: number, cursor: string | undefined) =>
      Effect.gen(function* () {
        yield* find(workspaceId, runId)
        const after = cursor === undefined ? Option.some(["0"]) : decodeCursor(cursor, 1)
        if (Option.isNone(after) || !/^\d{1,9}$/.test(after.value[0]!)) return yield* invalidCursor
        const rows = yield* repo.listEvents(workspaceId, runId, limit, Number(after.value[0]))
        const page = rows.slice(0, limit)
        const last = page[page.length - 1]
        return {
          events: page.map(toRunEvent),
          ...(rows.length > limit && last !== undefined ? { next_cursor: encodeCursor([String(last.sequence)]) } : {})
        }
      })

    const runTraces = (workspaceId: string, runId: string, limit: number, cursor: string | undefined) =>
      Effect.zipRight(find(workspaceId, runId), traces.list(workspaceId, { runId }, limit, cursor))

    const detail = (workspaceId: string, runId: string) =>
      Effect.gen(function* () {
        const run = yield* find(workspaceId, runId)
        const { events: eventPage } = yield* events(workspaceId, runId, 200, undefined)
        const { traces: tracePage } = yield* traces.list(workspaceId, { runId }, 100, undefined)
        return {
          run: toRun(run),
          events: eventPage,
          traces: tracePage,
          guardrail_usage: [],
          budget_decision: null,
          provider_usage: null
        }
      })

    return { create, list, update, appendRunEvent, events, runTraces, detail }
  }),
  dependencies: [RunEventWriter.Default]
}) {}
