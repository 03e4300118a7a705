/**
 * Helpers of the runs HTTP suites over the contract's typed client: the keys
 * of runs and traces as sent, reading runs, appending run events, and paging
 * (following and forging cursors). Creating runs and proposing events:
 * test/support/Events.ts.
 */
import { expect } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { type CreateRun, CreateRunEvent, type ListRunsParams, RunId, type UpdateRun } from "../../src/runs/Domain.js"
import { apiOf, createRun, type Owner } from "../support/Events.js"
import { call } from "../support/Raw.js"
import type { Tenant } from "../support/Tenants.js"

export const RUN_KEYS = [
  "agent_id",
  "blocked_count",
  "created_at",
  "ended_at",
  "environment",
  "environment_id",
  "escalated_count",
  "external_id",
  "id",
  "kind",
  "metadata",
  "p95_latency_ms",
  "rewritten_count",
  "started_at",
  "status",
  "trace_count",
  "updated_at",
  "workspace_id"
]

export const TRACE_KEYS = [
  "agent_id",
  "created_at",
  "decision",
  "domain",
  "elapsed_ms",
  "environment",
  "environment_id",
  "latest_review_outcome",
  "latest_reviewed_at",
  "payload",
  "policy_set_digest",
  "run_event_id",
  "run_id",
  "session_id",
  "trace_id"
]

/** `GET /v1/runs/{id}` (200). */
export const getRun = (base: string, owner: Owner, id: string) =>
  Effect.flatMap(apiOf(base, owner), (api) => api.runs.getRun({ path: { id: RunId.make(id) } }))

/** A run event to append; its `kind` is checked against the contract's kinds before it is sent. */
export type RunEventInput = Omit<typeof CreateRunEvent.Type, "kind"> & { readonly kind: string }

/** `POST /v1/runs/{id}/events` (201). */
export const appendEvent = (base: string, owner: Owner, runId: string, body: RunEventInput) =>
  Effect.gen(function* () {
    const api = yield* apiOf(base, owner)
    const payload = yield* Schema.decodeUnknown(CreateRunEvent)(body)
    return yield* api.runs.appendRunEvent({ path: { id: RunId.make(runId) }, payload })
  })

/** The cursor of the next page, as URL parameters to spread (none on the first page). */
export type CursorParams = { readonly cursor?: string }

/**
 * Follows `next_cursor` from the first page to the last of a list whose items are under `key`;
 * answers every page.
 */
export const allPages = <K extends string, A, E, R>(
  key: K,
  page: (
    cursor: CursorParams
  ) => Effect.Effect<{ readonly [P in K]: ReadonlyArray<A> } & { readonly next_cursor?: string | undefined }, E, R>,
  maxPages = 200
) =>
  Effect.gen(function* () {
    const pages: Array<ReadonlyArray<A>> = []
    let cursor: CursorParams = {}
    for (let i = 0; i < maxPages; i++) {
      const answer = yield* page(cursor)
      pages.push(answer[key])
      if (answer.next_cursor === undefined) return pages
      expect(typeof answer.next_cursor).toBe("string")
      cursor = { cursor: answer.next_cursor }
    }
    throw new Error(`more than ${maxPages} pages`)
  })

/** A base64url cursor holding `text`: how the service's own cursors are encoded, forged. */
export const forgedCursor = (text: string) => Buffer.from(text).toString("base64url")

export const patchRun = (owner: Tenant, id: RunId, body: typeof UpdateRun.Type) =>
  owner.api.runs.updateRun({ path: { id }, payload: body })

/** `PATCH /v1/runs/{id}` sent raw: for bodies outside the contract. */
export const patchRunRaw = (base: string, owner: Tenant, id: string, body: Record<string, unknown>) =>
  call(base, "PATCH", `/v1/runs/${encodeURIComponent(id)}`, { token: owner.jwt, body })

export const listRuns = (
  owner: Tenant,
  query: typeof ListRunsParams.Type & { readonly limit?: number } & CursorParams = {}
) => owner.api.runs.listRuns({ urlParams: query })

/** Creates `count` runs, `parallel` at a time. */
export const createRuns = (base: string, owner: Tenant, count: number, body: (i: number) => typeof CreateRun.Type) =>
  Effect.forEach(
    Array.from({ length: count }, (_, i) => i),
    (i) => createRun(base, owner, body(i)),
    { concurrency: 8 }
  )

export const idsOf = (runs: ReadonlyArray<{ id: string }>) => runs.map((run) => run.id)
