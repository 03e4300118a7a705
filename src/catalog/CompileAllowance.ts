/**
 * How much regex compiling the requests of one workspace, and of all together, may cause on the API's
 * thread. One request's regexes are bounded (CompileBudget.ts: about a second at most), but requests
 * can follow one another: with distinct heavy patterns each time, one member could keep the thread
 * compiling and every workspace's decisions waiting. So the compile time a request causes (measured,
 * not estimated) is a debt of its workspace and of the process, paid back at
 * COMPILE_MS_PER_SECOND_PER_WORKSPACE and COMPILE_MS_PER_SECOND. While either debt is past what
 * 30 seconds of payback cover, requests that may compile (policy create, PUT, rollback and validate,
 * dry runs with candidates, impact replays) answer 429 `compile_rate_limited` with Retry-After
 * (docs/policies.md#compile-budget). Decisions are never refused: patterns already compiled cost
 * nothing, and a workspace's stored patterns compile about once more when its policies next load.
 */
import { Effect } from "effect"
import { tooManyRequests, type TooManyRequests } from "../http/Errors.js"
import { AppConfig } from "../platform/Config.js"
import { compileMillisSpent } from "./UserRegex.js"

/** Debt may reach what this many seconds of payback cover before requests wait. */
export const BURST_SECONDS = 30
/** Workspaces tracked at most; past it, those whose debt is paid are forgotten first. */
const MAX_TRACKED = 10_000

/** A debt of compile milliseconds, paid back at `millisPerSecond`. */
export interface CompileMeter {
  debt: number
  at: number
}

/** The meter's debt at `now`, after payback. */
export const debtAt = (meter: CompileMeter, millisPerSecond: number, now: number) =>
  Math.max(0, meter.debt - ((now - meter.at) / 1000) * millisPerSecond)

/** Seconds until the meter's debt is back within its burst, or 0 when it is. */
export const waitFor = (meter: CompileMeter, millisPerSecond: number, now: number) => {
  const over = debtAt(meter, millisPerSecond, now) - millisPerSecond * BURST_SECONDS
  return over <= 0 ? 0 : Math.ceil(over / millisPerSecond)
}

export const charge = (meter: CompileMeter, millisPerSecond: number, millis: number, now: number) => {
  meter.debt = debtAt(meter, millisPerSecond, now) + millis
  meter.at = now
}

export class CompileAllowance extends Effect.Service<CompileAllowance>()("catalog/CompileAllowance", {
  effect: Effect.gen(function* () {
    const config = yield* AppConfig
    const perWorkspace = config.compileMillisPerSecondPerWorkspace
    const perProcess = config.compileMillisPerSecond
    const process: CompileMeter = { debt: 0, at: 0 }
    const workspaces = new Map<string, CompileMeter>()

    const meterOf = (workspaceId: string, now: number) => {
      let meter = workspaces.get(workspaceId)
      if (meter === undefined) {
        if (workspaces.size >= MAX_TRACKED) {
          for (const [id, other] of workspaces) if (debtAt(other, perWorkspace, now) === 0) workspaces.delete(id)
        }
        meter = { debt: 0, at: now }
        workspaces.set(workspaceId, meter)
      }
      return meter
    }

    /**
     * Runs `work` (synchronous, so every compile in it is this request's) when the workspace and the
     * process are within their allowance, and charges both with the compile time it took; else 429.
     */
    const metered = <A>(workspaceId: string, work: () => A): Effect.Effect<A, TooManyRequests> =>
      Effect.suspend(() => {
        const now = Date.now()
        const meter = workspaces.get(workspaceId)
        const workspaceWait = meter === undefined ? 0 : waitFor(meter, perWorkspace, now)
        const processWait = waitFor(process, perProcess, now)
        if (workspaceWait > 0 || processWait > 0) {
          return Effect.fail(
            tooManyRequests(
              Math.max(workspaceWait, processWait),
              workspaceWait > 0
                ? "This workspace's recent requests compiled regexes for longer than it may (COMPILE_MS_PER_SECOND_PER_WORKSPACE); retry after the time given, or reuse patterns already stored."
                : "The service's recent requests compiled regexes for longer than it may (COMPILE_MS_PER_SECOND); retry after the time given.",
              "compile_rate_limited"
            )
          )
        }
        const before = compileMillisSpent()
        const result = work()
        const spent = compileMillisSpent() - before
        if (spent > 0) {
          const end = Date.now()
          charge(meterOf(workspaceId, end), perWorkspace, spent, end)
          charge(process, perProcess, spent, end)
        }
        return Effect.succeed(result)
      })

    return { metered }
  })
}) {}
