/** Stub handlers of the red-team groups; each answers 501 until implemented. */
import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { GuardrailApi } from "../Api.js"
import { notImplemented } from "../platform/Errors.js"

const stub = (what: string) => () => Effect.fail(notImplemented(what))

export const RedteamHttpLive = HttpApiBuilder.group(GuardrailApi, "redteam", (handlers) =>
  handlers
    .handle("createPlan", stub("POST /v1/agents/{id}/redteam/plan"))
    .handle("listPlans", stub("GET /v1/agents/{id}/redteam/plans"))
    .handle("deletePlan", stub("DELETE /v1/redteam/plans/{id}"))
    .handle("generateStaticPolicies", stub("POST /v1/agents/{id}/redteam/static-policies"))
    .handle("listAttacks", stub("GET /v1/redteam/attacks"))
    .handle("dispatch", stub("POST /v1/redteam/dispatch"))
    .handle("listJobs", stub("GET /v1/redteam/jobs"))
    .handle("getJob", stub("GET /v1/redteam/jobs/{id}"))
    .handle("cancelJob", stub("POST /v1/redteam/jobs/{id}/cancel"))
    .handle("hardenJob", stub("POST /v1/redteam/jobs/{id}/harden"))
    .handle("getReport", stub("GET /v1/redteam/jobs/{id}/report"))
)

export const RedteamReportsHttpLive = HttpApiBuilder.group(GuardrailApi, "redteamReports", (handlers) =>
  handlers
    .handle("createShareLink", stub("POST /v1/redteam/reports"))
    .handle("getSharedReport", stub("GET /v1/redteam/reports/{token}"))
    .handle("revokeShareLink", stub("POST /v1/redteam/reports/{token}/revoke"))
)
