/**
 * The red-team job runner, a stream-worker layer. It claims queued jobs from
 * PostgreSQL (`for update skip locked`, so several workers share the queue;
 * fairly across workspaces, at most MAX_RUNNING_PER_WORKSPACE of one workspace,
 * see platform/JobQueues.ts), runs at most MAX_CONCURRENT_JOBS at a time with ATTACKS_IN_FLIGHT attacks
 * each (remote targets are also rate limited per target, see Targets.ts), and
 * records every attack as it finishes, so progress is visible and a resumed
 * job skips what is done.
 * - Cancel: the API marks the job `canceled`; the runner polls that it still holds
 *   its jobs every CANCEL_POLL and interrupts the job's attacks (well within a second).
 * - Restart: a worker heartbeats its running jobs; a job whose heartbeat is
 *   older than STALE_AFTER is put back in the queue (resumed where it stopped),
 *   or marked `failed` after MAX_RESUMES resumptions. A worker that shuts down
 *   hands its jobs back at once, and a job stopped by a database failure goes back to the
 *   queue too (counted as a resumption). No job stays `running` without a live worker.
 */
import { SqlClient } from "@effect/sql"
import { Cause, Duration, Effect, FiberSet, Layer, Schedule } from "effect"
import { randomBytes } from "node:crypto"
import { hostname } from "node:os"
import { Aggregates } from "../analytics/Aggregates.js"
import { Authorization } from "../authorization/Authorization.js"
import { AuthorizationLive } from "../authorization/Http.js"
import { CatalogLive } from "../catalog/Http.js"
import { CatalogSnapshot } from "../catalog/Snapshot.js"
import { WorkspaceSettings } from "../identity/WorkspaceSettings.js"
import { every } from "../platform/Background.js"
import { isDatabaseUnavailable } from "../platform/Sql.js"
import { OutboundGuard } from "../platform/OutboundGuard.js"
import { claimWhenQueued, jobsQueued } from "../platform/Signal.js"
import { DEMO_AGENT_ID } from "./DemoAgent.js"
import { runAttack } from "./Execution.js"
import { keepAttack } from "./Keeping.js"
import { liveDecider } from "./Guarding.js"
import { planFor } from "./Planner.js"
import { type JobRow, RedteamRepo } from "./Repo.js"
import { type AgentProfileView, attackCases, type JobProfile } from "./Techniques.js"

export const MAX_CONCURRENT_JOBS = 2
/** Jobs of one workspace running at once across all workers: one workspace fills one worker, never a fleet. */
export const MAX_RUNNING_PER_WORKSPACE = 2
export const ATTACKS_IN_FLIGHT = 4
const CANCEL_POLL = Duration.millis(200)
const HEARTBEAT_EVERY = Duration.seconds(2)
export const STALE_AFTER_SECONDS = 10
export const MAX_RESUMES = 3

const makeRunner = Effect.gen(function* () {
  const repo = yield* RedteamRepo
  const authorization = yield* Authorization
  const aggregates = yield* Aggregates
  const sql = yield* SqlClient.SqlClient
  const snapshots = yield* CatalogSnapshot
  const outbound = yield* OutboundGuard
  const settings = yield* WorkspaceSettings
  const workerId = `${hostname()}-${process.pid}-${randomBytes(4).toString("hex")}`
  const running = new Set<string>()
  const queued = yield* jobsQueued("redteam")
  const jobs = yield* FiberSet.make()

  // Canceled, or recovered and handed to another worker while this one's heartbeat was late: stop either way.
  const waitUntilNotHeld = (jobId: string) =>
    repo
      .isHeldBy(workerId, jobId)
      .pipe(
        Effect.repeat({ schedule: Schedule.spaced(CANCEL_POLL), while: (held) => held }),
        Effect.as("stopped" as const)
      )

  const runJob = (job: JobRow) =>
    Effect.gen(function* () {
      // Policies enabled since this process last looked must apply to this job.
      yield* snapshots.invalidate(job.workspace_id)
      const agent = job.agent_profile as AgentProfileView
      const cases = attackCases(job.profile as JobProfile, agent, planFor(agent).channels)
      const done = yield* repo.doneSeqs(job.id)
      const agentId = job.agent_id ?? DEMO_AGENT_ID
      const context = {
        jobId: job.id,
        workspaceId: job.workspace_id,
        target: job.target,
        agent,
        outbound,
        deciderFor: (sessionId: string) => liveDecider(authorization, job, agentId, sessionId)
      }
      const attacks = Effect.forEach(
        cases.filter((attack) => !done.has(attack.seq)),
        (attack) =>
          runAttack(context, attack).pipe(
            // The attack record and its analytics count commit together, and only a newly recorded attack
            // counts, so a resumed job neither loses nor double-counts a landed attack.
            // The mode is read per attack, so a change applies to the rest of a running job.
            Effect.tap((row) =>
              sql.withTransaction(
                settings.settingsOf(row.workspace_id).pipe(
                  Effect.flatMap(({ data_handling_mode }) => repo.insertAttack(keepAttack(data_handling_mode, row))),
                  Effect.flatMap((recorded) =>
                    recorded && row.landed
                      ? aggregates.add(row.workspace_id, new Date(), "redteam_landed", { agent_id: agentId }, 1)
                      : Effect.void
                  )
                )
              )
            )
          ),
        { concurrency: ATTACKS_IN_FLIGHT, discard: true }
      ).pipe(Effect.as("done" as const))
      const result = yield* Effect.raceFirst(attacks, waitUntilNotHeld(job.id))
      if (result === "done") yield* repo.finishJob(workerId, job.id, "completed", null)
    }).pipe(
      Effect.catchAllCause((cause) =>
        Cause.isInterruptedOnly(cause)
          ? Effect.failCause(cause)
          : // A database out of reach or timing out fails no job: it is resumed later, as after a crash.
            [...Cause.defects(cause), ...Cause.failures(cause)].some(isDatabaseUnavailable)
            ? Effect.logWarning("red-team job paused on a database failure; back in the queue", cause).pipe(
                Effect.zipRight(repo.resumeLater(workerId, job.id, MAX_RESUMES))
              )
            : Effect.logError("red-team job failed", cause).pipe(
                Effect.zipRight(
                  repo.finishJob(
                    workerId,
                    job.id,
                    "failed",
                    "The job stopped on an internal error; see the service log."
                  )
                )
              )
      ),
      // Interrupted by shutdown: hand the job back so a worker resumes it.
      Effect.onInterrupt(() => repo.release(workerId, job.id)),
      // A slot is free: a job still queued is claimed now, not at the next idle look.
      Effect.ensuring(
        Effect.zipRight(
          Effect.sync(() => running.delete(job.id)),
          queued.fire
        )
      ),
      Effect.withSpan("JobRunner.runJob", { attributes: { job_id: job.id, workspace_id: job.workspace_id } })
    )

  const claim = Effect.gen(function* () {
    const free = MAX_CONCURRENT_JOBS - running.size
    if (free <= 0) return
    const claimed = yield* repo.claimJobs(workerId, free, MAX_RUNNING_PER_WORKSPACE)
    for (const job of claimed) {
      running.add(job.id)
      yield* FiberSet.run(jobs, runJob(job))
    }
  })

  const recover = repo
    .recoverStale(STALE_AFTER_SECONDS, MAX_RESUMES)
    .pipe(
      Effect.tap((rows) =>
        rows.length === 0
          ? Effect.void
          : Effect.logWarning("red-team jobs recovered from a stopped worker", { jobs: rows })
      )
    )

  yield* Effect.forkScoped(every("red-team recovery", Duration.seconds(STALE_AFTER_SECONDS / 2), recover))
  yield* Effect.forkScoped(
    every(
      "red-team heartbeat",
      HEARTBEAT_EVERY,
      Effect.suspend(() => repo.heartbeat(workerId, [...running]))
    )
  )
  yield* claimWhenQueued(queued, claim, (cause) => Effect.logWarning("red-team claim failed; retrying", cause))
})

/** The runner with the services it needs beyond the platform (its own pipeline and catalog view). */
export const JobRunnerLive = Layer.scopedDiscard(makeRunner).pipe(
  Layer.provide(RedteamRepo.Default),
  Layer.provide(Aggregates.Default),
  Layer.provide(AuthorizationLive),
  Layer.provide(CatalogLive),
  Layer.provide(WorkspaceSettings.Default),
  Layer.provide(OutboundGuard.Default)
)
