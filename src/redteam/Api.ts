/** The red-team contract: plans, dispatch, jobs, attack records, reports, hardening and share links. */
import { Authentication } from "../identity/Authentication.js"
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as OpenApi from "@effect/platform/OpenApi"
import { Schema } from "effect"
import { AgentId, PolicyDetail } from "../catalog/Domain.js"
import { CursorParam, Identifier, LimitParam } from "../platform/Schemas.js"
import {
  AttackOutcome,
  AttackRecord,
  Comparison,
  CreatePlan,
  CreateShareLink,
  Dispatch,
  HardeningResult,
  HardenRequest,
  Job,
  JobId,
  JobWithSessions,
  Plan,
  PlanId,
  Report,
  ReportParams,
  ShareLink,
  ShareToken
} from "./Domain.js"

const AgentPath = Schema.Struct({ id: AgentId })
const JobPath = Schema.Struct({ id: JobId })
const TokenPath = Schema.Struct({ token: ShareToken })
// Red-team lists take a count of at least 1 (capped at 100 by the handler).
const Page = { limit: Schema.optional(LimitParam()), cursor: Schema.optional(CursorParam) }
const nextCursor = Schema.optional(Schema.String)

export class RedteamApi extends HttpApiGroup.make("redteam")
  .add(
    HttpApiEndpoint.post("createPlan", "/agents/:id/redteam/plan")
      .setPath(AgentPath)
      .setPayload(CreatePlan)
      .addSuccess(Plan, { status: 201 })
  )
  .add(
    HttpApiEndpoint.get("listPlans", "/agents/:id/redteam/plans")
      .setPath(AgentPath)
      .addSuccess(Schema.Struct({ plans: Schema.Array(Plan) }))
  )
  .add(
    HttpApiEndpoint.del("deletePlan", "/redteam/plans/:id")
      .setPath(Schema.Struct({ id: PlanId }))
      .addSuccess(HttpApiSchema.NoContent)
  )
  // Creates (disabled) policies, hence 201.
  .add(
    HttpApiEndpoint.post("generateStaticPolicies", "/agents/:id/redteam/static-policies")
      .setPath(AgentPath)
      .addSuccess(Schema.Struct({ generated: Schema.Array(PolicyDetail) }), { status: 201 })
  )
  .add(
    HttpApiEndpoint.get("listAttacks", "/redteam/attacks")
      .setUrlParams(
        Schema.Struct({
          attack: Schema.optional(Identifier),
          outcome: Schema.optional(AttackOutcome),
          job_id: Schema.optional(Identifier),
          ...Page
        })
      )
      .addSuccess(Schema.Struct({ records: Schema.Array(AttackRecord), next_cursor: nextCursor }))
  )
  .add(HttpApiEndpoint.post("dispatch", "/redteam/dispatch").setPayload(Dispatch).addSuccess(Job, { status: 201 }))
  .add(
    HttpApiEndpoint.get("listJobs", "/redteam/jobs")
      .setUrlParams(Schema.Struct({ agent_id: Schema.optional(Identifier), ...Page }))
      .addSuccess(Schema.Struct({ jobs: Schema.Array(Job), next_cursor: nextCursor }))
  )
  .add(
    HttpApiEndpoint.get("getJob", "/redteam/jobs/:id")
      .setPath(JobPath)
      .setUrlParams(Schema.Struct({ cursor: Schema.optional(CursorParam) }))
      .addSuccess(JobWithSessions)
  )
  .add(HttpApiEndpoint.post("cancelJob", "/redteam/jobs/:id/cancel").setPath(JobPath).addSuccess(Job))
  .add(
    HttpApiEndpoint.post("hardenJob", "/redteam/jobs/:id/harden")
      .setPath(JobPath)
      .setPayload(HardenRequest)
      .addSuccess(HardeningResult)
  )
  .add(
    HttpApiEndpoint.get("getHardening", "/redteam/jobs/:id/hardening")
      .setPath(JobPath)
      .addSuccess(HardeningResult)
      .annotate(
        OpenApi.Description,
        "Extension: the job's last hardening result (404 hardening_not_found before the first)."
      )
  )
  .add(
    HttpApiEndpoint.get("compareJobs", "/redteam/jobs/:id/compare")
      .setPath(JobPath)
      .setUrlParams(Schema.Struct({ with: JobId }))
      .addSuccess(Comparison)
      .annotate(
        OpenApi.Description,
        "Extension: landed attacks of this job against another job of the same agent, as new, fixed and persisting (matched by attack name)."
      )
  )
  .add(
    HttpApiEndpoint.get("getReport", "/redteam/jobs/:id/report")
      .setPath(JobPath)
      .setUrlParams(ReportParams)
      .addSuccess(Report)
  )
  .prefix("/v1")
  .middleware(Authentication)
  .annotate(
    OpenApi.Description,
    "Automated red-team testing: attack plans, jobs against an agent (or the built-in demo://local-agent), reports and hardening candidates."
  ) {}

// GET /redteam/reports/{token} is unauthenticated (the token is the capability), so the
// middleware covers only the endpoints added before `middlewareEndpoints`.
export class RedteamReportsApi extends HttpApiGroup.make("redteamReports")
  .add(
    HttpApiEndpoint.post("createShareLink", "/redteam/reports")
      .setPayload(CreateShareLink)
      .addSuccess(ShareLink, { status: 201 })
  )
  .add(
    HttpApiEndpoint.post("revokeShareLink", "/redteam/reports/:token/revoke")
      .setPath(TokenPath)
      .addSuccess(HttpApiSchema.NoContent)
  )
  .middlewareEndpoints(Authentication)
  .add(HttpApiEndpoint.get("getSharedReport", "/redteam/reports/:token").setPath(TokenPath).addSuccess(Report))
  .prefix("/v1")
  // Added after the prefix: the human-readable page lives at /r/{token}, beside the API.
  .add(
    HttpApiEndpoint.get("getSharedReportHtml", "/r/:token")
      .setPath(TokenPath)
      .addSuccess(HttpApiSchema.Text({ contentType: "text/html" }))
      .annotate(OpenApi.Description, "The shared report as an HTML page; the token is the capability.")
  )
  .annotate(
    OpenApi.Description,
    "Shareable red-team report links; reading one needs only its token, scoped to the workspace that minted it."
  ) {}
