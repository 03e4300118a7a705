/** Handlers of the red-team groups, with the red-team services they use. */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect, Layer } from "effect"
import { GuardrailApi } from "../Api.js"
import { htmlPage, SHARED_REPORT_HEADERS } from "../dashboard/Http.js"
import { CurrentCaller, inWorkspace } from "../identity/Authentication.js"
import { Redteam } from "./Redteam.js"
import { RedteamPolicies } from "./RedteamPolicies.js"
import { RedteamRepo } from "./Repo.js"
import { SharedReports } from "./SharedReports.js"

const RedteamServicesLive = Layer.mergeAll(RedteamPolicies.Default, SharedReports.Default).pipe(
  Layer.provideMerge(Redteam.Default),
  Layer.provideMerge(RedteamRepo.Default)
)

export const RedteamHttpLive = HttpApiBuilder.group(GuardrailApi, "redteam", (handlers) =>
  Effect.gen(function* () {
    const redteam = yield* Redteam
    const policies = yield* RedteamPolicies
    const reports = yield* SharedReports
    return handlers
      .handle("createPlan", ({ path, payload }) => inWorkspace((ws) => redteam.createPlan(ws, path.id, payload.name)))
      .handle("listPlans", ({ path }) => inWorkspace((ws) => redteam.listPlans(ws, path.id)))
      .handle("deletePlan", ({ path }) => inWorkspace((ws) => redteam.deletePlan(ws, path.id)))
      .handle("generateStaticPolicies", ({ path }) => inWorkspace((ws) => policies.generateStatic(ws, path.id)))
      .handle("listAttacks", ({ urlParams }) => inWorkspace((ws) => redteam.listAttacks(ws, urlParams)))
      .handle("dispatch", ({ payload }) => Effect.flatMap(CurrentCaller, (caller) => redteam.dispatch(caller, payload)))
      .handle("listJobs", ({ urlParams }) => inWorkspace((ws) => redteam.listJobs(ws, urlParams)))
      .handle("getJob", ({ path, urlParams }) => inWorkspace((ws) => redteam.getJob(ws, path.id, urlParams.cursor)))
      .handle("cancelJob", ({ path }) => inWorkspace((ws) => redteam.cancelJob(ws, path.id)))
      .handle("hardenJob", ({ path }) => inWorkspace((ws) => policies.harden(ws, path.id)))
      .handle("getHardening", ({ path }) => inWorkspace((ws) => policies.hardening(ws, path.id)))
      .handle("compareJobs", ({ path, urlParams }) => inWorkspace((ws) => reports.compare(ws, path.id, urlParams.with)))
      .handle("getReport", ({ path, urlParams }) =>
        inWorkspace((ws) => reports.report(ws, path.id, urlParams.compare_job_id ?? null))
      )
  })
).pipe(Layer.provide(RedteamServicesLive))

export const RedteamReportsHttpLive = HttpApiBuilder.group(GuardrailApi, "redteamReports", (handlers) =>
  Effect.gen(function* () {
    const reports = yield* SharedReports
    return handlers
      .handle("createShareLink", ({ payload }) =>
        Effect.flatMap(CurrentCaller, (caller) => reports.createShareLink(caller, payload))
      )
      .handle("getSharedReport", ({ path }) => reports.sharedReport(path.token))
      .handle("revokeShareLink", ({ path }) => inWorkspace((ws) => reports.revoke(ws, path.token)))
      .handle("getSharedReportHtml", ({ path }) =>
        Effect.map(reports.sharedReportHtml(path.token), (html) => htmlPage(html, SHARED_REPORT_HEADERS))
      )
  })
).pipe(Layer.provide(RedteamServicesLive))
