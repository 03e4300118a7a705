/**
 * The impact replay runner, a stream-worker layer (like the red-team runner,
 * src/redteam/JobRunner.ts): it claims one queued job at a time from
 * PostgreSQL (`for update skip locked`, so several workers share the queue;
 * fairly across workspaces, one running per workspace, platform/JobQueues.ts),
 * reads the window's retained decisions oldest first a page at a time,
 * replays each (Replay.ts), records progress after every page and every sixth
 * of IMPACT_STALE_AFTER_SECONDS (its heartbeat) and stores the result with its
 * digest. A job whose worker stopped is queued again and replayed from the
 * start (a replay is cheap and its result must not depend on where it stopped);
 * a worker that finds its job taken from it stops replaying it.
 */
import { Cause, Duration, Effect, Either, Fiber, Layer, Option } from "effect"
import { randomBytes } from "node:crypto"
import { hostname } from "node:os"
import { CatalogLive } from "../catalog/Http.js"
import { CatalogSnapshot } from "../catalog/Snapshot.js"
import { WorkspaceSettings } from "../identity/WorkspaceSettings.js"
import { AppConfig } from "../platform/Config.js"
import { every, giveBackThread } from "../platform/Background.js"
import { claimWhenQueued, jobsQueued } from "../platform/Signal.js"
import { candidateOf, makeTally, resultDigest } from "./Replay.js"
import { type ImpactJobRow, ImpactRepo, type RetainedRow } from "./Repo.js"

/** Decisions read per query (and per progress update). */
export const PAGE_SIZE = 2_000
/** Decisions replayed between yields to other fibers, at most. */
const YIELD_EVERY = 250
/** And the longest a slice of them may hold the thread before it yields. */
const SLICE_MS = 20
const MAX_RESUMES = 3
/** Replays of one workspace running at once across all workers: its replays run one after another. */
export const MAX_RUNNING_PER_WORKSPACE = 1

export const makeImpactRunner = Effect.gen(function* () {
  const repo = yield* ImpactRepo
  const snapshots = yield* CatalogSnapshot
  const settings = yield* WorkspaceSettings
  const { decisionMatchMillis, impactStaleAfterSeconds } = yield* AppConfig
  // A page of heavy decisions (each up to DECISION_MATCH_MS, twice) takes minutes: the heartbeat goes by time.
  const heartbeatMillis = (impactStaleAfterSeconds * 1000) / 6
  const workerId = `${hostname()}-${process.pid}-${randomBytes(4).toString("hex")}`

  /** Replays one claimed job to its result; a request that no longer compiles fails the job with why. */
  const replay = (job: ImpactJobRow) =>
    Effect.gen(function* () {
      const workspaceId = job.workspace_id
      const candidate = candidateOf(job.request)
      if (Either.isLeft(candidate)) return yield* repo.fail(workerId, job.id, candidate.left.message)
      // The live set as it is now, not as this process last cached it.
      yield* snapshots.invalidate(workspaceId)
      const live = yield* snapshots.get(workspaceId)
      const config = yield* settings.reloadRuntimeConfig(workspaceId)
      const landed = yield* repo.landed(workspaceId)
      const window = {
        workspaceId,
        start: job.request.start,
        end: job.request.end,
        agentId: job.request.agent_id ?? null
      }
      yield* repo.setTotal(workerId, job.id, yield* repo.count(window))
      const tally = makeTally({
        workspaceId,
        live,
        overlay: candidate.right.overlay,
        changed: candidate.right.changed,
        config,
        landed,
        matchMillis: decisionMatchMillis
      })
      const pageAfter = (after: RetainedRow | undefined) =>
        repo.page({ ...window, afterAt: after?.created_at ?? null, afterId: after?.id ?? "", limit: PAGE_SIZE })
      let lastBeat = performance.now()
      /** Records progress; false when the job was taken from this worker (recovered as stale). */
      const beat = Effect.suspend(() => {
        lastBeat = performance.now()
        return repo.progress(workerId, job.id, tally.replayed())
      })
      // The next page is read while this one is replayed (PostgreSQL works beside this thread).
      let next = yield* Effect.fork(pageAfter(undefined))
      for (;;) {
        const rows: ReadonlyArray<RetainedRow> = yield* Fiber.join(next)
        const last = rows[rows.length - 1]
        const more = rows.length === PAGE_SIZE && last !== undefined
        if (more) next = yield* Effect.fork(pageAfter(last))
        // Other fibers of this thread (the stream consumers, the read of the next page) and its sockets
        // (Kafka heartbeats) get it back between slices: a slice ends after YIELD_EVERY decisions or SLICE_MS, whichever comes first
        // (heavy decisions, each up to DECISION_MATCH_MS per evaluation, would otherwise hold it for minutes).
        let sliceStart = performance.now()
        let inSlice = YIELD_EVERY // the read of the next page starts before the first slice
        for (const row of rows) {
          if (inSlice >= YIELD_EVERY || performance.now() - sliceStart > SLICE_MS) {
            yield* giveBackThread
            if (performance.now() - lastBeat > heartbeatMillis && !(yield* beat)) return yield* Fiber.interrupt(next)
            sliceStart = performance.now()
            inSlice = 0
          }
          tally.add(row)
          inSlice++
        }
        if (!(yield* beat)) return yield* Fiber.interrupt(next)
        if (!more) break
      }
      const result = tally.result()
      yield* repo.complete(workerId, job.id, tally.replayed(), result, resultDigest(result))
    })

  const runJob = (job: ImpactJobRow) =>
    replay(job).pipe(
      Effect.catchAllCause((cause) =>
        Cause.isInterruptedOnly(cause)
          ? Effect.failCause(cause)
          : Effect.logError("impact replay failed", cause).pipe(
              Effect.zipRight(
                repo.fail(workerId, job.id, "The replay stopped on an internal error; see the service log.")
              )
            )
      ),
      // Interrupted by shutdown: hand the job back so a worker replays it.
      Effect.onInterrupt(() => repo.release(workerId, job.id)),
      Effect.withSpan("ImpactRunner.runJob", { attributes: { job_id: job.id, workspace_id: job.workspace_id } })
    )

  /** Claims and replays queued jobs one after another, until none is left. */
  const drain: Effect.Effect<void> = Effect.flatMap(repo.claim(workerId, MAX_RUNNING_PER_WORKSPACE), (claimed) =>
    Option.match(claimed, { onNone: () => Effect.void, onSome: (job) => Effect.zipRight(runJob(job), drain) })
  )

  yield* Effect.forkScoped(
    every(
      "impact recovery",
      Duration.millis((impactStaleAfterSeconds * 1000) / 3),
      repo.recoverStale(impactStaleAfterSeconds, MAX_RESUMES)
    )
  )
  yield* claimWhenQueued(yield* jobsQueued("impact"), drain, (cause) =>
    Effect.logWarning("impact claim failed; retrying", cause)
  )
})

/** The runner with the services it needs beyond the platform (its own catalog view and settings). */
export const ImpactRunnerLive = Layer.scopedDiscard(makeImpactRunner).pipe(
  Layer.provide(ImpactRepo.Default),
  Layer.provide(CatalogLive),
  Layer.provide(WorkspaceSettings.Default)
)
