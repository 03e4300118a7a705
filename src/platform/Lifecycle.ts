/** Logs when a process part has started and when its shutdown has finished (finalizers run in reverse). */
import { Effect, Layer } from "effect"

export const lifecycleLog = (name: string) =>
  Layer.scopedDiscard(Effect.acquireRelease(Effect.logInfo(`${name} started`), () => Effect.logInfo(`${name} stopped`)))

/**
 * `NodeRuntime.runMain` handles the first SIGINT/SIGTERM by interrupting the
 * program (finalizers run) and then removes its listeners, so a second
 * signal would kill the process mid-shutdown. A process group stop delivers
 * the signal twice (once directly, once relayed by `tsx`/`npm`), so repeats
 * are ignored while shutdown runs; a third signal forces the exit.
 */
export const guardRepeatedSignals = () => {
  let received = 0
  const onSignal = () => {
    received += 1
    if (received >= 3) process.exit(130)
  }
  process.on("SIGINT", onSignal)
  process.on("SIGTERM", onSignal)
}
