/**
 * `POST /v1/policies/impact` queues a replay of the workspace's retained
 * decisions against a candidate policy set (run by the stream worker,
 * Runner.ts); `GET /v1/policies/impact/{id}` shows its progress and result.
 * A workspace keeping metadata only retains no decision inputs: 409. A
 * workspace at MAX_IMPACT_JOBS_PER_WORKSPACE queued or running: 429 `too_many_jobs`.
 */
import { Effect, Either, Option, Schema } from "effect"
import { CompileAllowance } from "../catalog/CompileAllowance.js"
import { CatalogRepo } from "../catalog/Repo.js"
import { BadRequest, Conflict, NotFound, tooManyRequests } from "../http/Errors.js"
import type { Caller } from "../identity/Authentication.js"
import { WorkspaceSettings } from "../identity/WorkspaceSettings.js"
import { AppConfig } from "../platform/Config.js"
import { prefixedId } from "../platform/Ids.js"
import { toTimestamp, toTimestampOrNull } from "../platform/Schemas.js"
import { jobsQueued } from "../platform/Signal.js"
import { ImpactJob, ImpactJobId, type ImpactRequest, ImpactResult } from "./Domain.js"
import { candidateOf } from "./Replay.js"
import { type ImpactJobRow, ImpactRepo } from "./Repo.js"

const decodeResult = Schema.decodeUnknownOption(ImpactResult)
/** Retry-After of a replay refused at the workspace's job cap: most replays take seconds. */
const QUEUE_FULL_RETRY_SECONDS = 5

export const toImpactJob = (row: ImpactJobRow) =>
  new ImpactJob({
    id: ImpactJobId.make(row.id),
    status: row.status,
    progress: { replayed: row.replayed, total: row.total },
    start: toTimestamp(row.request.start),
    end: toTimestamp(row.request.end),
    agent_id: row.request.agent_id ?? null,
    candidate_policy_count: row.request.candidate_policies?.length ?? 0,
    enable_ids: row.request.enable_ids ?? [],
    disable_ids: row.request.disable_ids ?? [],
    document_digests: row.document_digests,
    result: Option.getOrNull(decodeResult(row.result)),
    result_digest: row.result_digest,
    error: row.error,
    created_at: toTimestamp(row.created_at),
    started_at: toTimestampOrNull(row.started_at),
    finished_at: toTimestampOrNull(row.finished_at)
  })

const replayUnavailable = new Conflict({
  code: "replay_unavailable",
  message:
    "This workspace's data_handling_mode is metadata_only: decisions keep only a digest and the length of their " +
    "content, so there is no input to replay. Set data_handling_mode to redacted or raw_allowed; decisions made " +
    "from then on (within retention_days) can be replayed."
})

export class Impact extends Effect.Service<Impact>()("impact/Impact", {
  scoped: Effect.gen(function* () {
    const queued = yield* jobsQueued("impact")
    const config = yield* AppConfig
    const repo = yield* ImpactRepo
    const catalog = yield* CatalogRepo
    const settings = yield* WorkspaceSettings
    const allowance = yield* CompileAllowance

    const start = Effect.fn("Impact.start")(function* (caller: Caller, request: ImpactRequest) {
      const workspaceId = caller.workspaceId
      const { data_handling_mode } = yield* settings.settingsOf(workspaceId)
      if (data_handling_mode === "metadata_only") return yield* replayUnavailable
      if (Date.parse(request.start) >= Date.parse(request.end)) {
        return yield* new BadRequest({
          code: "validation_failed",
          message: "end: must be after start",
          details: [{ path: "end", message: "must be after start" }]
        })
      }
      const ids = [...new Set(request.enable_ids ?? [])]
      const rows = ids.length === 0 ? [] : yield* catalog.findPolicies(workspaceId, ids)
      const missing = ids.filter((id) => !rows.some((row) => row.id === id))
      if (missing.length > 0) {
        return yield* new NotFound({
          code: "policy_not_found",
          message: `No policy ${missing.join(", ")} in this workspace.`,
          details: missing.map((id) => ({ path: "enable_ids", message: `${id} not found` }))
        })
      }
      const stored = {
        ...request,
        start: new Date(request.start).toISOString(),
        end: new Date(request.end).toISOString(),
        enabled_documents: ids.flatMap((id) =>
          rows.filter((row) => row.id === id).map((row) => ({ id, version: row.version, document: row.document }))
        )
      }
      // Compiling the candidates runs on this thread: within the workspace's compile allowance.
      const candidate = yield* allowance.metered(workspaceId, () => candidateOf(stored))
      if (Either.isLeft(candidate)) return yield* candidate.left
      const max = config.maxImpactJobsPerWorkspace
      const inserted = yield* repo.insert(max, {
        id: prefixedId("imp"),
        workspaceId,
        request: stored,
        digests: candidate.right.digests,
        createdBy: caller.principalId
      })
      if (Option.isNone(inserted)) {
        return yield* tooManyRequests(
          QUEUE_FULL_RETRY_SECONDS,
          `This workspace already has ${max} impact replays queued or running (MAX_IMPACT_JOBS_PER_WORKSPACE); start this one when one finishes.`,
          "too_many_jobs"
        )
      }
      yield* queued.fire
      return toImpactJob(inserted.value)
    })

    const get = Effect.fn("Impact.get")(function* (workspaceId: string, id: string) {
      const row = yield* repo.find(workspaceId, id)
      if (Option.isNone(row)) {
        return yield* new NotFound({ code: "impact_job_not_found", message: `No impact job ${id} in this workspace.` })
      }
      return toImpactJob(row.value)
    })

    return { start, get }
  }),
  dependencies: [ImpactRepo.Default, CatalogRepo.Default, CompileAllowance.Default]
}) {}
