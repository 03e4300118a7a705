/**
 * The red-team service behind the API: plans, dispatch, jobs, cancel and
 * attack records. Jobs are only queued here; the stream worker's JobRunner
 * runs them.
 */
import { Effect, Either, Option } from "effect"
import { Agents } from "../catalog/Agents.js"
import type { Caller } from "../identity/Authentication.js"
import { WorkspaceSettings } from "../identity/WorkspaceSettings.js"
import { AppConfig } from "../platform/Config.js"
import { OutboundGuard } from "../platform/OutboundGuard.js"
import { decodeCursor, encodeCursor, invalidCursor, pageByTime } from "../platform/Cursor.js"
import { MAX_PAGE_BYTES } from "../platform/PageBytes.js"
import { BadRequest, Conflict, NotFound, tooManyRequests } from "../http/Errors.js"
import { prefixedId } from "../platform/Ids.js"
import { pageSize, toTimestamp } from "../platform/Schemas.js"
import { orFailWith } from "../platform/Sql.js"
import { jobsQueued } from "../platform/Signal.js"
import { DEMO_PROFILE } from "./DemoAgent.js"
import { DEMO_TARGET_URL, Plan, PlanId } from "./Domain.js"
import { planFor } from "./Planner.js"
import { type PlanRow, RedteamRepo } from "./Repo.js"
import { toAttackRecord, toJob, toSession } from "./Reports.js"
import { checkTargetUrl } from "./Targets.js"
import type { AgentProfileView } from "./Techniques.js"

export const LIST_CAP = 100
/** Retry-After of a dispatch refused at the workspace's job cap: a quick job takes about this long. */
const QUEUE_FULL_RETRY_SECONDS = 30

/** An attack `seq` in a cursor: 1 to 999,999,999 (the `integer` column holds it). */
const seqOf = (text: string): Option.Option<number> =>
  /^[1-9][0-9]{0,8}$/.test(text) ? Option.some(Number(text)) : Option.none()

export const jobNotFound = (id: string) =>
  new NotFound({ code: "job_not_found", message: `No red-team job ${id} in this workspace.` })

const toPlan = (row: PlanRow) =>
  new Plan({
    id: PlanId.make(row.id),
    agent_id: row.agent_id,
    name: row.name,
    generated_at: toTimestamp(row.created_at),
    paths: row.paths as Plan["paths"],
    unmapped_node_types: row.unmapped_node_types as Plan["unmapped_node_types"],
    vectors: row.vectors as Plan["vectors"]
  })

/** The profile fields the red team reads, from a stored agent profile. */
export const profileView = (profile: {
  readonly agent_id: string
  readonly system_prompt: string | null
  readonly authority: { readonly cannot_promise: ReadonlyArray<string> }
  readonly scope: { readonly in_scope: ReadonlyArray<string>; readonly out_of_scope: ReadonlyArray<string> }
  readonly workflow_definition: unknown
}): AgentProfileView => ({
  agent_id: profile.agent_id,
  system_prompt: profile.system_prompt,
  authority: { cannot_promise: profile.authority.cannot_promise },
  scope: { in_scope: profile.scope.in_scope, out_of_scope: profile.scope.out_of_scope },
  workflow_definition: profile.workflow_definition
})

export class Redteam extends Effect.Service<Redteam>()("redteam/Redteam", {
  scoped: Effect.gen(function* () {
    const queued = yield* jobsQueued("redteam")
    const config = yield* AppConfig
    const repo = yield* RedteamRepo
    const agents = yield* Agents
    const settings = yield* WorkspaceSettings
    const outbound = yield* OutboundGuard

    const findJob = Effect.fn("Redteam.findJob")((workspaceId: string, id: string) =>
      repo.findJob(workspaceId, id).pipe(orFailWith(() => jobNotFound(id)))
    )

    // ---- plans

    const createPlan = Effect.fn("Redteam.createPlan")(function* (
      workspaceId: string,
      agentId: string,
      name: string | undefined
    ) {
      const profile = profileView(yield* agents.find(workspaceId, agentId))
      const content = planFor(profile)
      const trimmed = name?.trim()
      const row = yield* repo.insertPlan({
        id: prefixedId("rtp"),
        workspace_id: workspaceId,
        agent_id: agentId,
        name: trimmed === undefined || trimmed === "" ? `${agentId} plan ${new Date().toISOString()}` : trimmed,
        paths: content.paths,
        unmapped_node_types: content.unmapped_node_types,
        vectors: content.vectors
      })
      return toPlan(row)
    })

    const listPlans = Effect.fn("Redteam.listPlans")((workspaceId: string, agentId: string) =>
      Effect.zipRight(
        agents.find(workspaceId, agentId),
        Effect.map(repo.listPlans(workspaceId, agentId), (rows) => ({ plans: rows.map(toPlan) }))
      )
    )

    const deletePlan = Effect.fn("Redteam.deletePlan")((workspaceId: string, id: string) =>
      Effect.flatMap(repo.deletePlan(workspaceId, id), (deleted) =>
        deleted
          ? Effect.void
          : Effect.fail(new NotFound({ code: "plan_not_found", message: `No plan ${id} in this workspace.` }))
      )
    )

    // ---- jobs

    const defaultEnvironment = (workspaceId: string) =>
      Effect.map(settings.runtimeConfig(workspaceId), (runtime) => {
        const entries = [...runtime.environments]
        return (entries.find(([, environment]) => environment.isDefault) ?? entries[0])?.[0]
      })

    const dispatch = Effect.fn("Redteam.dispatch")(function* (
      caller: Caller,
      input: {
        readonly profile: "quick" | "standard" | "deep"
        readonly target_url: string
        readonly agent_id?: string | undefined
      }
    ) {
      const workspaceId = caller.workspaceId
      let profile: AgentProfileView = DEMO_PROFILE
      if (input.agent_id !== undefined) {
        const agent = yield* agents.find(workspaceId, input.agent_id)
        if (agent.target_url !== input.target_url) {
          return yield* new BadRequest({
            code: "target_mismatch",
            message: `target_url must be exactly agent ${input.agent_id}'s stored target_url (${agent.target_url ?? "none stored"}).`,
            details: [{ path: "target_url", message: "does not match the agent's target_url" }]
          })
        }
        profile = profileView(agent)
      } else if (input.target_url !== DEMO_TARGET_URL) {
        return yield* new BadRequest({
          code: "demo_target_only",
          message: `Without agent_id only the demo target ${DEMO_TARGET_URL} is accepted; name the agent whose target_url this is.`,
          details: [{ path: "target_url", message: `expected ${DEMO_TARGET_URL} without agent_id` }]
        })
      }
      const checked = yield* checkTargetUrl(outbound, input.target_url)
      if (Either.isLeft(checked)) {
        return yield* new BadRequest({
          code: checked.left.code,
          message: checked.left.message,
          details: [{ path: "target_url", message: checked.left.message }]
        })
      }
      const environmentId = caller.environmentId ?? (yield* defaultEnvironment(workspaceId))
      if (environmentId === undefined) {
        return yield* new Conflict({
          code: "no_environment",
          message: "This workspace has no environment to run the job in."
        })
      }
      const max = config.maxRedteamJobsPerWorkspace
      const inserted = yield* repo.insertJob(max, {
        id: prefixedId("rtj"),
        workspace_id: workspaceId,
        environment_id: environmentId,
        agent_id: input.agent_id ?? null,
        profile: input.profile,
        target: input.target_url,
        agent_profile: profile
      })
      if (Option.isNone(inserted)) {
        return yield* tooManyRequests(
          QUEUE_FULL_RETRY_SECONDS,
          `This workspace already has ${max} red-team jobs queued or running (MAX_REDTEAM_JOBS_PER_WORKSPACE); dispatch again when one finishes, or cancel one.`,
          "too_many_jobs"
        )
      }
      yield* queued.fire
      return toJob(inserted.value)
    })

    const listJobs = Effect.fn("Redteam.listJobs")(function* (
      workspaceId: string,
      query: {
        readonly agent_id?: string | undefined
        readonly limit?: number | undefined
        readonly cursor?: string | undefined
      }
    ) {
      const limit = pageSize(query.limit, LIST_CAP)
      const { next, page } = yield* pageByTime(query.cursor, limit, (after) =>
        repo.listJobs(workspaceId, { agentId: query.agent_id, after, limit })
      )
      return { jobs: page.map(toJob), ...next }
    })

    const getJob = Effect.fn("Redteam.getJob")(function* (workspaceId: string, id: string, cursor: string | undefined) {
      const job = yield* findJob(workspaceId, id)
      let afterSeq = 0
      if (cursor !== undefined) {
        const seq = Option.flatMap(decodeCursor(cursor, 1), ([text]) => seqOf(text!))
        if (Option.isNone(seq)) return yield* invalidCursor
        afterSeq = seq.value
      }
      const { more, rows } = yield* repo.sessionsOf(workspaceId, id, afterSeq, MAX_PAGE_BYTES)
      const last = rows[rows.length - 1]
      return {
        job: toJob(job),
        sessions: rows.map(toSession),
        ...(more && last !== undefined ? { next_cursor: encodeCursor([String(last.seq)]) } : {})
      }
    })

    const cancelJob = Effect.fn("Redteam.cancelJob")(function* (workspaceId: string, id: string) {
      const canceled = yield* repo.cancelJob(workspaceId, id)
      // Already finished (perhaps a moment ago): cancel changes nothing and answers the job as it is now.
      return toJob(Option.isSome(canceled) ? canceled.value : yield* findJob(workspaceId, id))
    })

    const listAttacks = Effect.fn("Redteam.listAttacks")(function* (
      workspaceId: string,
      query: {
        readonly attack?: string | undefined
        readonly outcome?: string | undefined
        readonly job_id?: string | undefined
        readonly limit?: number | undefined
        readonly cursor?: string | undefined
      }
    ) {
      const limit = pageSize(query.limit, LIST_CAP)
      let after = Option.none<{ jobId: string; seq: number }>()
      if (query.cursor !== undefined) {
        const parts = decodeCursor(query.cursor, 2)
        const seq = Option.flatMap(parts, ([, text]) => seqOf(text!))
        if (Option.isNone(parts) || Option.isNone(seq)) return yield* invalidCursor
        after = Option.some({ jobId: parts.value[0]!, seq: seq.value })
      }
      const { more, rows } = yield* repo.listAttacks(workspaceId, {
        attack: query.attack,
        outcome: query.outcome,
        jobId: query.job_id,
        after,
        limit,
        maxBytes: MAX_PAGE_BYTES
      })
      const last = rows[rows.length - 1]
      return {
        records: rows.map(toAttackRecord),
        ...(more && last !== undefined ? { next_cursor: encodeCursor([last.job_id, String(last.seq)]) } : {})
      }
    })

    return { findJob, createPlan, listPlans, deletePlan, dispatch, listJobs, getJob, cancelJob, listAttacks }
  }),
  dependencies: [RedteamRepo.Default, OutboundGuard.Default]
}) {}
