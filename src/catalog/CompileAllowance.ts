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
import { charge, makeWorkMeters, waitFor, type WorkMeter } from "../platform/WorkMeters.js"

/** Debt may reach what this many seconds of payback cover before requests wait. */
export const BURST_SECONDS = 30
import { compileMillisSpent } from "./UserRegex.js"

export class CompileAllowance extends Effect.Service<CompileAllowance>()("catalog/CompileAllowance", {
  effect: Effect.gen(function* () {
    const config = yield* AppConfig
    const perWorkspace = config.compileMillisPerSecondPerWorkspace
    const perProcess = config.compileMillisPerSecond
    const processMeter: WorkMeter = { debt: 0, at: 0 }
    const workspaces = makeWorkMeters(perWorkspace, perWorkspace * BURST_SECONDS)

    /**
     * Runs `work` (synchronous, so every compile in it is this request's) when the workspace and the
     * process are within their allowance, and charges both with the compile time it took; else 429.
     */
    const metered = <A>(workspaceId: string, work: () => A): Effect.Effect<A, TooManyRequests> =>
      Effect.suspend(() => {
        const now = Date.now()
        const workspaceWait = workspaces.waitFor(workspaceId)
        const processWait = waitFor(processMeter, perProcess, perProcess * BURST_SECONDS, now)
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
          workspaces.charge(workspaceId, spent, end)
          charge(processMeter, perProcess, spent, end)
        }
        return Effect.succeed(result)
      })

    return { metered }
  })
}) {}
