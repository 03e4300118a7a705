/**
 * Report permits: how many report queries (endpoints annotated `ReportQuery`)
 * run at once. The process serves at most MAX_CONCURRENT_REPORTS, so reports
 * never hold every database connection decisions need; a workspace holds at
 * most MAX_CONCURRENT_REPORTS_PER_WORKSPACE of them, so one workspace's slow
 * reports never hold every permit the other workspaces' reports need.
 *
 * The request pipeline opens a turn for each report request (Pipeline.ts) and
 * ends it when the request is answered; the credential middleware admits the
 * turn once it knows the caller's workspace (AuthenticationLive.ts), before
 * the handler runs. Admission waits for a permit of the workspace first, and
 * only then for one of the process: a workspace's extra reports wait behind
 * its own, holding no permit the other workspaces could use. Waiting stops
 * when the client goes away (the request's fiber is interrupted).
 */
import { Effect } from "effect"

/** One report request's permits. */
export interface ReportTurn {
  /** Waits for a permit of `workspaceId`, then for one of the process; held until the turn ends. Once per turn. */
  readonly admit: (workspaceId: string) => Effect.Effect<void>
  /** Gives back whatever the turn holds (nothing when it was never admitted). */
  readonly end: Effect.Effect<void>
}

export interface ReportPermits {
  readonly turn: () => ReportTurn
  /** Workspaces holding or awaiting a permit (for tests: the state never outgrows the reports in flight). */
  readonly workspacesInUse: () => number
}

interface WorkspacePermits {
  readonly permits: Effect.Semaphore
  /** Turns of the workspace that hold or await one of its permits. */
  users: number
}

export const makeReportPermits = (perProcess: number, perWorkspace: number): ReportPermits => {
  const processPermits = Effect.unsafeMakeSemaphore(perProcess)
  const limit = Math.min(perWorkspace, perProcess)
  // Only workspaces with a report in flight have an entry: the last turn to leave drops it.
  const workspaces = new Map<string, WorkspacePermits>()

  const join = (workspaceId: string) => {
    let entry = workspaces.get(workspaceId)
    if (entry === undefined) {
      entry = { permits: Effect.unsafeMakeSemaphore(limit), users: 0 }
      workspaces.set(workspaceId, entry)
    }
    entry.users++
    return entry
  }

  const leave = (workspaceId: string, entry: WorkspacePermits) =>
    Effect.sync(() => {
      entry.users--
      if (entry.users === 0 && workspaces.get(workspaceId) === entry) workspaces.delete(workspaceId)
    })

  const turn = (): ReportTurn => {
    let admitted = false
    // What to give back, last taken first.
    const held: Array<Effect.Effect<void>> = []
    const keep = (release: Effect.Effect<void>) =>
      Effect.sync(() => {
        held.unshift(release)
      })
    return {
      admit: (workspaceId) =>
        Effect.uninterruptibleMask((restore) =>
          Effect.suspend(() => {
            if (admitted) return Effect.void
            admitted = true
            const entry = join(workspaceId)
            held.unshift(leave(workspaceId, entry))
            // Each permit is recorded as soon as it is taken (uninterruptibly), so an interrupted wait leaks none.
            return restore(entry.permits.take(1)).pipe(
              Effect.zipRight(keep(entry.permits.release(1))),
              Effect.zipRight(restore(processPermits.take(1))),
              Effect.zipRight(keep(processPermits.release(1)))
            )
          })
        ),
      end: Effect.suspend(() => Effect.forEach(held.splice(0), (release) => release, { discard: true }))
    }
  }

  return { turn, workspacesInUse: () => workspaces.size }
}
