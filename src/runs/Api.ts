/** The runs contract: `/v1/runs` and its events and traces, workspace traces, and review events on traces. */
import { ReportQuery } from "../http/Routes.js"
import { Authentication } from "../identity/Authentication.js"
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import { Schema } from "effect"
import { CursorParam, LimitParam } from "../platform/Schemas.js"
import {
  CreateReviewEvent,
  CreateRun,
  CreateRunEvent,
  ListRunEventsParams,
  ListRunsParams,
  ListRunTracesParams,
  ListTracesParams,
  ReviewEvent,
  Run,
  RunDetail,
  RunEvent,
  RunId,
  Trace,
  TraceId,
  UpdateRun
} from "./Domain.js"

export const RunPath = Schema.Struct({ id: RunId })
const TracePath = Schema.Struct({ trace_id: TraceId })
const Page = { limit: Schema.optional(LimitParam()), cursor: Schema.optional(CursorParam) }
const nextCursor = Schema.optional(Schema.String)

export class RunsApi extends HttpApiGroup.make("runs")
  .add(
    HttpApiEndpoint.get("listRuns", "/runs")
      .setUrlParams(Schema.Struct({ ...ListRunsParams.fields, ...Page }))
      .addSuccess(Schema.Struct({ runs: Schema.Array(Run), next_cursor: nextCursor }))
  )
  .add(HttpApiEndpoint.post("createRun", "/runs").setPayload(CreateRun).addSuccess(Run, { status: 201 }))
  .add(HttpApiEndpoint.get("getRun", "/runs/:id").setPath(RunPath).addSuccess(RunDetail))
  .add(HttpApiEndpoint.patch("updateRun", "/runs/:id").setPath(RunPath).setPayload(UpdateRun).addSuccess(Run))
  .add(
    HttpApiEndpoint.get("listRunEvents", "/runs/:id/events")
      .setPath(RunPath)
      .setUrlParams(Schema.Struct({ ...ListRunEventsParams.fields, ...Page }))
      .addSuccess(Schema.Struct({ events: Schema.Array(RunEvent), next_cursor: nextCursor }))
  )
  .add(
    HttpApiEndpoint.post("appendRunEvent", "/runs/:id/events")
      .setPath(RunPath)
      .setPayload(CreateRunEvent)
      .addSuccess(RunEvent, { status: 201 })
  )
  .add(
    HttpApiEndpoint.get("listRunTraces", "/runs/:id/traces")
      .setPath(RunPath)
      .setUrlParams(Schema.Struct({ ...ListRunTracesParams.fields, ...Page }))
      .addSuccess(Schema.Struct({ traces: Schema.Array(Trace), next_cursor: nextCursor }))
  )
  .prefix("/v1")
  .middleware(Authentication)
  .annotate(OpenApi.Description, "Runs group ordered run events and the decision traces made during them.") {}

export class TracesApi extends HttpApiGroup.make("traces")
  .add(
    HttpApiEndpoint.get("listTraces", "/traces")
      .setUrlParams(Schema.Struct({ ...ListTracesParams.fields, ...Page }))
      .addSuccess(
        Schema.Struct({
          traces: Schema.Array(Trace),
          next_cursor: nextCursor,
          tail_cursor: Schema.optional(Schema.String).annotations({
            description: "Poll GET /v1/traces?after=<tail_cursor> (same filters) for newer traces"
          })
        })
      )
      .annotate(ReportQuery, true)
  )
  .add(
    HttpApiEndpoint.get("getTrace", "/traces/:trace_id")
      .setPath(TracePath)
      .addSuccess(Trace)
      .annotate(OpenApi.Summary, "Get a trace")
      .annotate(
        OpenApi.Description,
        "Extension: one decision trace with its request, decision, findings and latest review outcome; 404 trace_not_found when the workspace has none by that id."
      )
  )
  .prefix("/v1")
  .middleware(Authentication)
  .annotate(
    OpenApi.Description,
    "Decision traces of the workspace, newest first; one per authorization call. With `after`, the live tail: the traces after that position, oldest first (docs/dashboard.md)."
  ) {}

export class ReviewEventsApi extends HttpApiGroup.make("reviewEvents")
  .add(
    HttpApiEndpoint.get("listReviewEvents", "/traces/:trace_id/review-events")
      .setPath(TracePath)
      .setUrlParams(Schema.Struct(Page))
      .addSuccess(Schema.Struct({ review_events: Schema.Array(ReviewEvent), next_cursor: nextCursor }))
  )
  .add(
    HttpApiEndpoint.post("createReviewEvent", "/traces/:trace_id/review-events")
      .setPath(TracePath)
      .setPayload(CreateReviewEvent)
      .addSuccess(ReviewEvent, { status: 201 })
  )
  .prefix("/v1")
  .middleware(Authentication)
  .annotate(
    OpenApi.Description,
    "Human review outcomes attached to a trace; the trace then exposes its latest outcome."
  ) {}
