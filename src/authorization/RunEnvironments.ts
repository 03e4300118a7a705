/**
 * The run an event names must be of the event's environment: a runtime key
 * of one environment may not add decisions to another environment's run
 * (its counters, its trace timeline, its provenance). A run never changes
 * environment, so what was read is kept (bounded, oldest dropped first); a
 * run id no run has is accepted as a bare correlation id, as before runs
 * existed, and looked up again next time (the run may be created since).
 */
import { Forbidden } from "../http/Errors.js"

const MAX_REMEMBERED_RUNS = 100_000

export const makeRunEnvironments = () => {
  const known = new Map<string, string>()
  const keyOf = (workspaceId: string, runId: string) => `${workspaceId}\u0000${runId}`
  return {
    /** The remembered environment of a run; undefined when it must be read. */
    peek: (workspaceId: string, runId: string) => known.get(keyOf(workspaceId, runId)),
    remember: (workspaceId: string, runId: string, environmentId: string) => {
      if (known.size >= MAX_REMEMBERED_RUNS) known.delete(known.keys().next().value ?? "")
      known.set(keyOf(workspaceId, runId), environmentId)
    }
  }
}

/** Why an event may not name its run: the run is another environment's (undefined when it may). */
export const runMismatch = (runId: string, runEnvironment: string | null, eventEnvironment: string) =>
  runEnvironment === null || runEnvironment === eventEnvironment
    ? undefined
    : new Forbidden({
        code: "environment_mismatch",
        message: `Run ${runId} belongs to environment ${runEnvironment}; this event's environment is ${eventEnvironment}. Name a run of the event's own environment.`,
        details: [{ path: "run_id", message: `the run's environment is ${runEnvironment}` }]
      })
