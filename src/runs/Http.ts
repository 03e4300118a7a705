/** Stub handlers of the runs, traces and review-events groups; each answers 501 until implemented. */
import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { GuardrailApi } from "../Api.js"
import { CurrentCaller } from "../identity/Authentication.js"
import { pageSize } from "../platform/Schemas.js"
import { Traces } from "./Traces.js"
import { notImplemented } from "../platform/Errors.js"

const stub = (what: string) => () => Effect.fail(notImplemented(what))

export const RunsHttpLive = HttpApiBuilder.group(GuardrailApi, "runs", (handlers) =>
  handlers
    .handle("listRuns", stub("GET /v1/runs"))
    .handle("createRun", stub("POST /v1/runs"))
    .handle("getRun", stub("GET /v1/runs/{id}"))
    .handle("updateRun", stub("PATCH /v1/runs/{id}"))
    .handle("listRunEvents", stub("GET /v1/runs/{id}/events"))
    .handle("appendRunEvent", stub("POST /v1/runs/{id}/events"))
    .handle("listRunTraces", stub("GET /v1/runs/{id}/traces"))
)

export const TracesHttpLive = HttpApiBuilder.group(GuardrailApi, "traces", (handlers) =>
  Effect.gen(function* () {
    const traces = yield* Traces
    return handlers.handle("listTraces", ({ urlParams }) =>
      Effect.flatMap(CurrentCaller, (caller) =>
        traces.list(
          caller.workspaceId,
          {
            sessionId: urlParams.session_id,
            agentId: urlParams.agent_id,
            runId: urlParams.run_id,
            effect: urlParams.effect
          },
          pageSize(urlParams.limit, 100),
          urlParams.cursor
        )
      )
    )
  })
)

export const ReviewEventsHttpLive = HttpApiBuilder.group(GuardrailApi, "reviewEvents", (handlers) =>
  handlers
    .handle("listReviewEvents", stub("GET /v1/traces/{trace_id}/review-events"))
    .handle("createReviewEvent", stub("POST /v1/traces/{trace_id}/review-events"))
)
