/** Logs when a process part has started and when its shutdown has finished (finalizers run in reverse). */
import { Effect, Layer } from "effect"

export const lifecycleLog = (name: string) =>
  Layer.scopedDiscard(Effect.acquireRelease(Effect.logInfo(`${name} started`), () => Effect.logInfo(`${name} stopped`)))

/**
 * `NodeRuntime.runMain` handles the first SIGINT/SIGTERM by interrupting the
 * program (finalizers run) and then removes its listeners, so a second
 * signal would kill the process mid-shutdown. A process-group stop delivers
 * the signal several times (directly, and relayed by `npm`, `sh` and `tsx`),
 * so repeats are ignored while shutdown runs; SIGKILL still stops a stuck one.
 */
export const guardRepeatedSignals = () => {
  const ignore = () => {}
  process.on("SIGINT", ignore)
  process.on("SIGTERM", ignore)
}
