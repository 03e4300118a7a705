/**
 * A deadline for one decision's matching. Matching is synchronous on the API thread, so the work runs
 * under `withinMatchDeadline`, and the places where its time goes (each policy, each regex scan) call
 * `checkMatchDeadline`, which throws `MatchDeadlinePassed` once the deadline is behind. The throw
 * happens between scans, never inside the building of a shared view or a detector's memoised findings,
 * so nothing half-built is kept. The deadline is one variable, not an argument, because the work is
 * synchronous: nothing else runs on the thread until it returns or throws.
 */

/** Thrown by `checkMatchDeadline` once the current deadline is behind. */
export class MatchDeadlinePassed extends Error {
  override readonly name = "MatchDeadlinePassed"
}

/** `performance.now()` by which matching must end; Infinity outside `withinMatchDeadline` (dry runs, replays). */
let deadline = Number.POSITIVE_INFINITY

/** Runs `work` with `millis` to match in; it throws MatchDeadlinePassed when it takes longer. */
export const withinMatchDeadline = <A>(millis: number, work: () => A): A => {
  const outer = deadline
  deadline = Math.min(outer, performance.now() + millis)
  try {
    return work()
  } finally {
    deadline = outer
  }
}

/** Throws MatchDeadlinePassed when the current deadline is behind (reads no clock without one). */
export const checkMatchDeadline = (): void => {
  if (deadline !== Number.POSITIVE_INFINITY && performance.now() > deadline) throw new MatchDeadlinePassed()
}
