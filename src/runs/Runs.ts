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
import { decodeCursor, encodeCursor, invalidCursor, pageByTime, windowAround } from "../platform/Cursor.js"
import { BadRequest, Conflict, Forbidden, type HttpError, NotFound } from "../http/Errors.js"
import { type Answer, hotUseCase, ready, refused, type WarmSteps } from "../platform/Warm.js"
import { prefixedId } from "../platform/Ids.js"
import { MAX_PAGE_BYTES } from "../platform/PageBytes.js"
import { toTimestamp, toTimestampOrNull } from "../platform/Schemas.js"
import { keepJson } from "../privacy/Redaction.js"
import { orFailWith, transactionOf } from "../platform/Sql.js"
import { RunId, type RunKind, type RunStatus as RunStatuses } from "./Domain.js"

type RunStatus = typeof RunStatuses.Type
import { newRunEvent, type RunEventInput, toRunEvent } from "./RunEvents.js"
import { type NewRunEvent } from "./RunEventWriter.js"
import { environmentMismatch, RunEventWriter, runNotFound } from "./RunEventWriter.js"
import { type RunEventRow, type RunFilters, type RunRow, RunsRepo } from "./Repo.js"
import { Traces } from "./Traces.js"

const TERMINAL: ReadonlySet<string> = new Set(["completed", "failed", "canceled"])

const aroundWithCursor = new BadRequest({
  code: "validation_failed",
  message: "around: a window around one item and paging with cursor cannot be combined",
  details: [{ path: "around", message: "cannot be combined with cursor" }]
})

const runEventNotFound = (runId: string, eventId: string) =>
  new NotFound({ code: "run_event_not_found", message: `No event ${eventId} in run ${runId}.` })

/** A page of run events, with next_cursor after its last one when `more` follow. */
const eventPage = (page: ReadonlyArray<RunEventRow>, more: boolean) => {
  const last = page[page.length - 1]
  return {
    events: page.map(toRunEvent),
    ...(more && last !== undefined ? { next_cursor: encodeCursor([String(last.sequence)]) } : {})
  }
}

const toRun = (row: RunRow) => ({
  id: RunId.make(row.id),
  agent_id: row.agent_id,
  workspace_id: row.workspace_id,
  environment: row.environment,
  environment_id: row.environment_id,
  external_id: row.external_id,
  kind: row.kind,
  status: row.status,
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

/** An append: the event for run `runId` of the workspace. */
export interface AppendRequest {
  readonly workspaceId: string
  readonly runId: string
  /** The caller's bound environment (a runtime key's): it appends only to that environment's runs. */
  readonly environmentId: string | null
  readonly input: RunEventInput
}

type RunEvent = ReturnType<typeof toRunEvent>

export class Runs extends Effect.Service<Runs>()("runs/Runs", {
  effect: Effect.gen(function* () {
    const transaction = transactionOf(yield* SqlClient.SqlClient)
    const settings = yield* WorkspaceSettings
    const traces = yield* Traces
    const writer = yield* RunEventWriter

    const repo = yield* RunsRepo

    const find = (workspaceId: string, id: string) => repo.find(workspaceId, id).pipe(orFailWith(() => runNotFound(id)))

    const create = Effect.fn("Runs.create")(function* (
      caller: Caller,
      input: {
        readonly agent_id: string
        readonly kind: RunKind
        readonly external_id?: string | undefined
        readonly status?: RunStatus | undefined
        readonly environment_id?: string | undefined
        readonly metadata?: unknown
      }
    ) {
      const status = input.status ?? "running"
      if (TERMINAL.has(status)) {
        return yield* new BadRequest({
          code: "validation_failed",
          message: "status: a run starts warming or running",
          details: [{ path: "status", message: "a run starts warming or running" }]
        })
      }
      // A runtime key acts only in its own environment, as principal.environment_id of POST /v1/events.
      if (
        caller.environmentId !== null &&
        input.environment_id !== undefined &&
        input.environment_id !== caller.environmentId
      ) {
        return yield* new Forbidden({
          code: "environment_mismatch",
          message: `This runtime key is bound to environment ${caller.environmentId}; environment_id must be it, or be left out.`,
          details: [{ path: "environment_id", message: `expected ${caller.environmentId}` }]
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
        // A run's metadata is the caller's content, like its events': kept as the workspace's mode allows.
        metadata: keepJson(config.settings.data_handling_mode, input.metadata ?? null),
        started_at: status === "running" ? new Date() : null
      })
      return toRun(row)
    })

    const list = Effect.fn("Runs.list")(function* (
      workspaceId: string,
      filters: RunFilters,
      limit: number,
      cursor: string | undefined
    ) {
      const { next, page } = yield* pageByTime(cursor, limit, (after) => repo.list(workspaceId, filters, limit, after))
      return { runs: page.map(toRun), ...next }
    })

    const update = (
      caller: Caller,
      id: string,
      patch: {
        readonly status?: RunStatus | undefined
        readonly external_id?: string | null | undefined
        readonly metadata?: unknown
      }
    ) =>
      Effect.gen(function* () {
        // Read before the run's row lock is taken; the metadata is kept as the workspace's mode allows.
        const metadata =
          patch.metadata === undefined
            ? undefined
            : keepJson(yield* settings.dataHandlingMode(caller.workspaceId), patch.metadata)
        return yield* transaction(
          Effect.gen(function* () {
            const workspaceId = caller.workspaceId
            const current = Option.getOrUndefined(yield* repo.find(workspaceId, id, true))
            if (current === undefined) return yield* runNotFound(id)
            // A runtime key changes only runs of its own environment.
            if (caller.environmentId !== null && current.environment_id !== caller.environmentId) {
              return yield* environmentMismatch(caller.environmentId, `run ${id}`)
            }
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
            if (metadata !== undefined) values["metadata"] = JSON.stringify(metadata)
            return toRun(Object.keys(values).length === 0 ? current : yield* repo.update(workspaceId, id, values))
          })
        )
      }).pipe(Effect.withSpan("Runs.update"))

    /**
     * Appends one event to a run: the event is checked from memory (a bad `occurred_at` is refused), then
     * handed to the group-committing writer, which answers the stored event or the 404/409 that refused it.
     */
    const appendRunEvent = hotUseCase({
      name: "Runs.appendRunEvent",
      initial: undefined,
      steps: (request: AppendRequest): WarmSteps<undefined, NewRunEvent, HttpError, never, HttpError, never> => ({
        step: () =>
          Either.match(newRunEvent(request.workspaceId, request.runId, request.environmentId, request.input), {
            onLeft: refused,
            onRight: ready
          }),
        load: absurd
      }),
      act: (_, event, answer: Answer<RunEvent, HttpError>) =>
        writer.enqueue(event, (outcome) => answer(Exit.map(outcome, toRunEvent)))
    })

    /** The run's events around the event `eventId` (by sequence), with next_cursor for the ones after. */
    const eventsAround = Effect.fn("Runs.eventsAround")(function* (
      workspaceId: string,
      runId: string,
      eventId: string,
      limit: number
    ) {
      const { laterCut, rows } = yield* repo.listEventsAround(workspaceId, runId, eventId, limit, MAX_PAGE_BYTES / 2)
      const found = windowAround(rows, (row) => row.id === eventId, limit)
      if (found === undefined) return yield* runEventNotFound(runId, eventId)
      return eventPage(found.window, found.more || laterCut)
    })

    /** A page of the run's events from the start (or `cursor`), or with `around` the window around one. */
    const events = Effect.fn("Runs.events")(function* (
      workspaceId: string,
      runId: string,
      limit: number,
      cursor: string | undefined,
      around?: string | undefined
    ) {
      yield* find(workspaceId, runId)
      if (around !== undefined) {
        return yield* cursor === undefined ? eventsAround(workspaceId, runId, around, limit) : aroundWithCursor
      }
      const after = cursor === undefined ? Option.some(["0"]) : decodeCursor(cursor, 1)
      if (Option.isNone(after) || !/^\d{1,9}$/.test(after.value[0]!)) return yield* invalidCursor
      const { more, rows } = yield* repo.listEvents(workspaceId, runId, limit, Number(after.value[0]), MAX_PAGE_BYTES)
      return eventPage(rows, more)
    })

    /** A page of the run's traces, newest first, or with `around` the window around one. */
    const runTraces = Effect.fn("Runs.runTraces")(function* (
      workspaceId: string,
      runId: string,
      limit: number,
      cursor: string | undefined,
      around?: string | undefined
    ) {
      yield* find(workspaceId, runId)
      if (around === undefined) return yield* traces.list(workspaceId, { runId }, limit, cursor)
      return yield* cursor === undefined ? traces.around(workspaceId, runId, around, limit) : aroundWithCursor
    })

    const detail = Effect.fn("Runs.detail")(function* (workspaceId: string, runId: string) {
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
  dependencies: [RunEventWriter.Default, RunsRepo.Default]
}) {}
