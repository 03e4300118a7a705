/** Handlers of the runs, traces and review-events groups. */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect, Layer } from "effect"
import { GuardrailApi } from "../Api.js"
import { CurrentCaller, inWorkspace } from "../identity/Authentication.js"
import { type HotEndpoint, routerHandler } from "../http/Hot.js"
import { Idempotency } from "../idempotency/Idempotency.js"
import { pageSize } from "../platform/Schemas.js"
import { mapInput } from "../platform/Warm.js"
import type { RunPath } from "./Api.js"
import { type CreateRunEvent, type ListTracesParams, RunEvent } from "./Domain.js"
import { Reviews } from "./Reviews.js"
import { Runs } from "./Runs.js"
import { type TraceFilters, Traces } from "./Traces.js"
import { BadRequest } from "../http/Errors.js"

/** `POST /v1/runs/{id}/events`, appended at a high rate by agents: the router and the fast lane run this declaration. */
export const appendRunEvent = Effect.gen(function* () {
  const runs = yield* Runs
  const idempotency = yield* Idempotency
  const hot: HotEndpoint<typeof RunPath.Type, typeof CreateRunEvent.Type, typeof RunEvent.Type> = {
    group: "runs",
    endpoint: "appendRunEvent",
    raw: false,
    direct: true,
    useCase: mapInput(runs.appendRunEvent, (request) => ({
      workspaceId: request.caller.workspaceId,
      runId: request.path.id,
      environmentId: request.caller.environmentId,
      input: request.payload
    }))
  }
  return idempotency.hot(hot, RunEvent)
})

export const RunsHttpLive = HttpApiBuilder.group(GuardrailApi, "runs", (handlers) =>
  Effect.gen(function* () {
    const runs = yield* Runs
    const append = yield* appendRunEvent
    return handlers
      .handle("listRuns", ({ urlParams }) =>
        inWorkspace((ws) => runs.list(ws, urlParams, pageSize(urlParams.limit, 100), urlParams.cursor))
      )
      .handle("createRun", ({ payload }) => Effect.flatMap(CurrentCaller, (caller) => runs.create(caller, payload)))
      .handle("getRun", ({ path }) => inWorkspace((ws) => runs.detail(ws, path.id)))
      .handle("updateRun", ({ path, payload }) =>
        Effect.flatMap(CurrentCaller, (caller) => runs.update(caller, path.id, payload))
      )
      .handle("listRunEvents", ({ path, urlParams }) =>
        inWorkspace((ws) =>
          runs.events(ws, path.id, pageSize(urlParams.limit, 200), urlParams.cursor, urlParams.around)
        )
      )
      .handle("appendRunEvent", routerHandler(append))
      .handle("listRunTraces", ({ path, urlParams }) =>
        inWorkspace((ws) =>
          runs.runTraces(ws, path.id, pageSize(urlParams.limit, 100), urlParams.cursor, urlParams.around)
        )
      )
  })
)

export const TracesHttpLive = HttpApiBuilder.group(GuardrailApi, "traces", (handlers) =>
  Effect.gen(function* () {
    const traces = yield* Traces
    return handlers
      .handle("listTraces", ({ urlParams }) =>
        inWorkspace((ws) => {
          const filters = traceFilters(urlParams)
          const limit = pageSize(urlParams.limit, 100)
          if (urlParams.after === undefined) return traces.list(ws, filters, limit, urlParams.cursor)
          if (urlParams.cursor !== undefined) return Effect.fail(tailWithCursor)
          return traces.tail(ws, filters, limit, urlParams.after)
        })
      )
      .handle("getTrace", ({ path }) => inWorkspace((ws) => traces.get(ws, path.trace_id)))
  })
)

const tailWithCursor = new BadRequest({
  code: "validation_failed",
  message: "after: the live tail (after) and paging back (cursor) cannot be combined",
  details: [{ path: "after", message: "cannot be combined with cursor" }]
})

const traceFilters = (params: ListTracesParams): TraceFilters => ({
  sessionId: params.session_id,
  agentId: params.agent_id,
  runId: params.run_id,
  effect: params.effect,
  eventKind: params.event_kind,
  policyId: params.policy_id,
  environmentId: params.environment_id,
  reviewOutcome: params.review_outcome,
  start: params.start,
  end: params.end,
  q: params.q
})

export const ReviewEventsHttpLive = HttpApiBuilder.group(GuardrailApi, "reviewEvents", (handlers) =>
  Effect.gen(function* () {
    const reviews = yield* Reviews
    return handlers
      .handle("listReviewEvents", ({ path, urlParams }) =>
        inWorkspace((ws) => reviews.list(ws, path.trace_id, pageSize(urlParams.limit, 100), urlParams.cursor))
      )
      .handle("createReviewEvent", ({ path, payload }) =>
        Effect.flatMap(CurrentCaller, (caller) => reviews.create(caller, path.trace_id, payload))
      )
  })
)

export const RunsLive = Layer.mergeAll(Runs.Default, Reviews.Default).pipe(Layer.provideMerge(Traces.Default))
