/** The impact replay contract: start a replay of retained decisions against a candidate policy set, and read it. */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import { Schema } from "effect"
import { Authentication } from "../identity/Authentication.js"
import { ImpactJob, ImpactJobId, ImpactRequest } from "./Domain.js"

export class PolicyImpactApi extends HttpApiGroup.make("policyImpact")
  // Queued for the stream worker, hence 202 with the job.
  .add(
    HttpApiEndpoint.post("startPolicyImpact", "/policies/impact")
      .setPayload(ImpactRequest)
      .addSuccess(ImpactJob, { status: 202 })
  )
  .add(
    HttpApiEndpoint.get("getPolicyImpact", "/policies/impact/:id")
      .setPath(Schema.Struct({ id: ImpactJobId }))
      .addSuccess(ImpactJob)
  )
  .prefix("/v1")
  .middleware(Authentication)
  .annotate(
    OpenApi.Description,
    "Impact replay: what a candidate policy set would have decided over the workspace's retained past decisions, before enabling it."
  ) {}
