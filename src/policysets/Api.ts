/** The policy-set contract: `GET /v1/policy-sets/{digest}` (docs/policies.md, "Policy-set digest"). */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import { Schema } from "effect"
import { Authentication } from "../identity/Authentication.js"
import { PolicySet, PolicySetDigest } from "./Domain.js"

export class PolicySetsApi extends HttpApiGroup.make("policySets")
  .add(
    HttpApiEndpoint.get("getPolicySet", "/policy-sets/:digest")
      .setPath(Schema.Struct({ digest: PolicySetDigest }))
      .addSuccess(PolicySet)
      .annotate(
        OpenApi.Description,
        "Extension: the policy set a decision's policy_set_digest (on its trace and receipt) names: each policy version's document, the agent profile, tool metadata and label policy versions, checker modes, default action and detectors' version."
      )
  )
  .prefix("/v1")
  .middleware(Authentication)
  .annotate(
    OpenApi.Description,
    "Policy sets: exactly what decided, named by digest, kept so any receipt can be explained later."
  ) {}
