/**
 * Job reports and their share links. A share token (`rtr_` + 256 random bits)
 * is shown once and stored only as its SHA-256; reading a shared report needs
 * nothing but the token, and every lookup behind it is scoped to the
 * workspace stored with the link, never to the request. Revoked or expired
 * links answer 404.
 */
import { Effect, Option } from "effect"
import { createHash } from "node:crypto"
import type { Caller } from "../identity/Authentication.js"
import { BadRequest, NotFound } from "../http/Errors.js"
import { randomToken } from "../platform/Ids.js"
import { toTimestamp } from "../platform/Schemas.js"
import { Job, JobId, ShareLink, ShareToken } from "./Domain.js"
import { RedteamRepo } from "./Repo.js"
import { buildReport, comparisonOf, publicTarget } from "./Reports.js"
// The same renderer as the console's signed-in job page, run here without a browser (no script on the page).
import { reportPage } from "../dashboard/assets/report-render.js"
import { Redteam } from "./Redteam.js"

export const DEFAULT_LINK_DAYS = 7
export const MAX_LINK_DAYS = 90

const hashToken = (token: string) => createHash("sha256").update(token).digest("hex")

const linkNotFound = new NotFound({
  code: "share_link_not_found",
  message: "This report link does not exist, has expired or was revoked."
})

export class SharedReports extends Effect.Service<SharedReports>()("redteam/SharedReports", {
  effect: Effect.gen(function* () {
    const repo = yield* RedteamRepo
    const redteam = yield* Redteam

    const compareJob = (
      workspaceId: string,
      job: { readonly id: string; readonly agent_id: string | null },
      compareId: string
    ) =>
      Effect.gen(function* () {
        const other = yield* redteam.findJob(workspaceId, compareId)
        if (other.id === job.id || other.agent_id !== job.agent_id) {
          return yield* new BadRequest({
            code: "compare_job_mismatch",
            message: `compare_job_id must name another job of the same agent (${job.agent_id ?? "the demo agent"}).`,
            details: [{ path: "compare_job_id", message: "not another job of the same agent" }]
          })
        }
        return other
      })

    const report = Effect.fn("SharedReports.report")(function* (
      workspaceId: string,
      jobId: string,
      compareJobId: string | null
    ) {
      const job = yield* redteam.findJob(workspaceId, jobId)
      const attacks = yield* repo.findingsOf(workspaceId, jobId)
      let comparison: unknown = null
      if (compareJobId !== null) {
        const other = yield* compareJob(workspaceId, job, compareJobId)
        comparison = comparisonOf(other.id, attacks, yield* repo.findingsOf(workspaceId, other.id))
      }
      return buildReport(job, attacks, comparison)
    })

    /** `GET /v1/redteam/jobs/{id}/compare?with=`: the comparison alone. */
    const compare = Effect.fn("SharedReports.compare")(function* (
      workspaceId: string,
      jobId: string,
      withJobId: string
    ) {
      const job = yield* redteam.findJob(workspaceId, jobId)
      const other = yield* compareJob(workspaceId, job, withJobId).pipe(
        Effect.mapError((error) =>
          error._tag === "BadRequest"
            ? new BadRequest({
                code: error.code,
                message: error.message.replace("compare_job_id", "with"),
                details: [{ path: "with", message: "not another job of the same agent" }]
              })
            : error
        )
      )
      const comparison = comparisonOf(
        other.id,
        yield* repo.findingsOf(workspaceId, jobId),
        yield* repo.findingsOf(workspaceId, other.id)
      )
      return { ...comparison, compare_job_id: JobId.make(other.id) }
    })

    const createShareLink = Effect.fn("SharedReports.createShareLink")(function* (
      caller: Caller,
      input: {
        readonly job_id: string
        readonly compare_job_id?: string | undefined
        readonly expires_in_days?: number | undefined
      }
    ) {
      const job = yield* redteam.findJob(caller.workspaceId, input.job_id)
      if (input.compare_job_id !== undefined) yield* compareJob(caller.workspaceId, job, input.compare_job_id)
      const token = `rtr_${randomToken(32)}`
      const days = input.expires_in_days ?? DEFAULT_LINK_DAYS
      const row = yield* repo.insertShareLink({
        token_hash: hashToken(token),
        workspace_id: caller.workspaceId,
        job_id: job.id,
        compare_job_id: input.compare_job_id ?? null,
        created_by: caller.principalId,
        expires_at: new Date(Date.now() + Math.min(days, MAX_LINK_DAYS) * 86_400_000)
      })
      return new ShareLink({
        token: ShareToken.make(token),
        path: `/v1/redteam/reports/${token}`,
        html_path: `/r/${token}`,
        job_id: JobId.make(row.job_id),
        compare_job_id: row.compare_job_id === null ? null : JobId.make(row.compare_job_id),
        created_at: toTimestamp(row.created_at),
        expires_at: toTimestamp(row.expires_at)
      })
    })

    /** The live link of a token; every read behind it is scoped to the link's own workspace. */
    const liveLink = (token: string) =>
      Effect.flatMap(repo.findShareLink(hashToken(token)), (link) =>
        Option.isNone(link) ? Effect.fail(linkNotFound) : Effect.succeed(link.value)
      )

    /** The report behind a live token, read in the link's own workspace. */
    const sharedReport = Effect.fn("SharedReports.sharedReport")(function* (token: string) {
      const link = yield* liveLink(token)
      const shown = yield* report(link.workspace_id, link.job_id, link.compare_job_id).pipe(
        Effect.catchTag("NotFound", () => Effect.fail(linkNotFound)),
        Effect.catchTag("BadRequest", () => Effect.fail(linkNotFound))
      )
      return { ...shown, job: new Job({ ...shown.job, target: publicTarget(shown.job.target) }) }
    })

    /** The page of /r/{token}: the report and the job's stored hardening candidates (read-only there). */
    const sharedReportHtml = Effect.fn("SharedReports.sharedReportHtml")(function* (token: string) {
      const shown = yield* sharedReport(token)
      const link = yield* liveLink(token)
      const hardening = yield* repo.findHardening(link.workspace_id, link.job_id)
      return reportPage(shown, Option.getOrNull(hardening))
    })

    const revoke = Effect.fn("SharedReports.revoke")((workspaceId: string, token: string) =>
      Effect.flatMap(repo.revokeShareLink(workspaceId, hashToken(token)), (revoked) =>
        revoked ? Effect.void : Effect.fail(linkNotFound)
      )
    )

    return { report, compare, createShareLink, sharedReport, sharedReportHtml, revoke }
  })
}) {}
