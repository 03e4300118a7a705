/**
 * How much regex compiling the requests of one workspace, and of all together, may cause on the API's
 * thread. One request's regexes are bounded (CompileBudget.ts: about a second at most), but requests
 * can follow one another: with distinct heavy patterns each time, one member could keep the thread
 * compiling and every workspace's decisions waiting. So the compile time a request causes (measured,
 * not estimated) is a debt of its workspace and of the process, paid back at
 * COMPILE_MS_PER_SECOND_PER_WORKSPACE and COMPILE_MS_PER_SECOND. While the workspace's debt is past
 * what 30 seconds of payback cover, or the process's is and the workspace compiled in the last
 * minute (those that ran it up), requests that may compile (policy create, PUT, rollback and validate,
 * dry runs with candidates, impact replays) answer 429 `compile_rate_limited` with Retry-After
 * (docs/policies.md#compile-budget). Decisions are never refused: patterns already compiled cost
 * nothing, and a workspace's stored patterns compile about once more when its policies next load.
 */
import { Effect } from "effect"
import { tooManyRequests, type TooManyRequests } from "../http/Errors.js"
import { AppConfig } from "../platform/Config.js"
import { makeSharedAllowance } from "../platform/WorkMeters.js"
import { compileMillisSpent } from "./UserRegex.js"

/** Debt may reach what this many seconds of payback cover before requests wait. */
export const BURST_SECONDS = 30
/** How recently a workspace compiled for it to wait while the process is past its allowance. */
export const COMPILED_RECENTLY_MS = 60_000

export class CompileAllowance extends Effect.Service<CompileAllowance>()("catalog/CompileAllowance", {
  effect: Effect.gen(function* () {
    const config = yield* AppConfig
    const perWorkspace = config.compileMillisPerSecondPerWorkspace
    const perProcess = config.compileMillisPerSecond
    const allowance = makeSharedAllowance({
      perKey: perWorkspace,
      keyBurst: perWorkspace * BURST_SECONDS,
      perService: perProcess,
      serviceBurst: perProcess * BURST_SECONDS,
      recentMillis: COMPILED_RECENTLY_MS
    })

    /**
     * Runs `work` (synchronous, so every compile in it is this request's) when the workspace may compile,
     * and charges it with the compile time it took; else 429.
     */
    const metered = <A>(workspaceId: string, work: () => A): Effect.Effect<A, TooManyRequests> =>
      Effect.suspend(() => {
        const wait = allowance.waitFor(workspaceId)
        if (wait !== undefined) {
          return Effect.fail(
            tooManyRequests(
              wait.seconds,
              wait.scope === "key"
                ? "This workspace's recent requests compiled regexes for longer than it may (COMPILE_MS_PER_SECOND_PER_WORKSPACE); retry after the time given, or reuse patterns already stored."
                : "Recent requests of several workspaces, this one's among them, compiled regexes for longer than the service may (COMPILE_MS_PER_SECOND); retry after the time given.",
              "compile_rate_limited"
            )
          )
        }
        const before = compileMillisSpent()
        const result = work()
        const spent = compileMillisSpent() - before
        if (spent > 0) allowance.charge(workspaceId, spent, Date.now())
        return Effect.succeed(result)
      })

    return { metered }
  })
}) {}
