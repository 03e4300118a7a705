/** The audit log contract: `GET /v1/audit-events` and `GET /v1/audit-events/verify` (admins and owners). */
import { ReportQuery } from "../http/Routes.js"
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import { Authentication } from "../identity/Authentication.js"
import { AuditEventPage, ListAuditEventsParams, VerifyResult } from "./Domain.js"

export class AuditEventsApi extends HttpApiGroup.make("auditEvents")
  .add(
    HttpApiEndpoint.get("listAuditEvents", "/audit-events")
      .setUrlParams(ListAuditEventsParams)
      .addSuccess(AuditEventPage)
      // A filter few rows match (an actor, a time window) reads the workspace's whole chain.
      .annotate(ReportQuery, true)
  )
  .add(
    HttpApiEndpoint.get("verifyAuditEvents", "/audit-events/verify")
      .addSuccess(VerifyResult)
      .annotate(ReportQuery, true)
  )
  .prefix("/v1")
  .middleware(Authentication)
  .annotate(
    OpenApi.Description,
    "The workspace's audit log: every change to configuration or access, hash-chained; see docs/audit.md."
  ) {}
