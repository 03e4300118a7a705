/**
 * A part of the service in its own worker thread: an event loop (and a core)
 * of its own in the same process. The all-in-one service runs its stream
 * workers this way over PostgreSQL, so consumer batches never stall the
 * API's event loop and the two use both cores.
 *
 * Stopping sends the thread "stop" (it interrupts its program: finalizers
 * run, consumer positions are committed) and waits for it to exit, within
 * `stopWithin`. A thread that dies on its own stops the whole process with
 * exit code 1 (its supervisor restarts the service whole).
 */
import { Duration, Effect, Exit, Fiber, Layer, Runtime } from "effect"
import { setPriority } from "node:os"
import { parentPort, Worker } from "node:worker_threads"
import { AppConfig } from "./Config.js"

const STOP = "stop"

export const workerThreadLayer = (name: string, entry: URL, stopWithin: Duration.DurationInput) =>
  Layer.scopedDiscard(
    Effect.gen(function* () {
      const runFork = Runtime.runFork(yield* Effect.runtime<never>())
      let stopping = false
      let exited = false
      const worker = yield* Effect.acquireRelease(
        Effect.sync(() => new Worker(entry)),
        (worker) =>
          Effect.async<void>((resume) => {
            stopping = true
            if (exited) return resume(Effect.void)
            worker.once("exit", () => resume(Effect.void))
            worker.postMessage(STOP)
          }).pipe(
            Effect.timeout(stopWithin),
            Effect.catchAll(() =>
              Effect.logWarning(`${name} thread did not stop in time; terminated`).pipe(
                Effect.zipRight(Effect.promise(() => worker.terminate()))
              )
            )
          )
      )
      worker.once("error", (error) => {
        if (stopping) return
        stopping = true
        runFork(Effect.logError(`${name} thread failed; stopping the service`, error))
        process.exitCode = 1
        process.kill(process.pid, "SIGTERM")
      })
      worker.once("exit", (code) => {
        exited = true
        if (stopping) return
        stopping = true
        runFork(Effect.logError(`${name} thread exited (code ${code}); stopping the service`))
        process.exitCode = 1
        process.kill(process.pid, "SIGTERM")
      })
    })
  )

/**
 * Lowers the calling thread's CPU priority to the configured nice value. On
 * Linux `setpriority(PRIO_PROCESS, 0, ...)` applies to the calling thread
 * only, so the API's thread keeps its priority: when the cores are busy it
 * answers requests first, and the stream workers catch up in the slack.
 */
export const ThreadPriorityLive = Layer.effectDiscard(
  Effect.flatMap(AppConfig, (config) =>
    Effect.try(() => setPriority(0, config.streamWorkerThreadNice)).pipe(
      Effect.catchAll((error) => Effect.logWarning("could not lower the stream-worker thread's priority", error))
    )
  )
)

/**
 * Runs `program` as a worker thread's main program until the parent sends
 * "stop" (then interrupts it and lets the thread exit).
 */
export const runInWorkerThread = <E>(program: Effect.Effect<never, E>) => {
  const fiber = Effect.runFork(program)
  parentPort?.once("message", (message) => {
    if (message === STOP) Effect.runFork(Fiber.interrupt(fiber))
  })
  fiber.addObserver((exit) => {
    if (Exit.isFailure(exit) && !Exit.isInterrupted(exit)) process.exitCode = 1
    parentPort?.close()
  })
}
