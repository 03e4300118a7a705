/** Logs when a process part has started and when its shutdown has finished (finalizers run in reverse). */
import { Effect, Layer } from "effect"

export const lifecycleLog = (name: string) =>
  Layer.scopedDiscard(Effect.acquireRelease(Effect.logInfo(`${name} started`), () => Effect.logInfo(`${name} stopped`)))
