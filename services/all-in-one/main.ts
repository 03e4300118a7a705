/**
 * API and stream workers in one process (what `npm start` runs). Over
 * PostgreSQL the stream workers run in a worker thread (their own event loop
 * and core; STREAM_WORKER_THREAD=false keeps them on the API's); over the
 * embedded database everything shares one thread.
 */
import { NodeRuntime } from "@effect/platform-node"
import { Duration, Effect, Layer } from "effect"
import { AppConfig, isEmbeddedDatabase } from "../../src/platform/Config.js"
import { guardRepeatedSignals, lifecycleLog } from "../../src/platform/Lifecycle.js"
import { LoggingLive } from "../../src/platform/Logging.js"
import { PlatformLive } from "../../src/platform/Platform.js"
import { workerThreadLayer } from "../../src/platform/WorkerThread.js"
import { HttpServerLive } from "../../src/Server.js"
import { StreamWorkersLive } from "../../src/StreamWorkers.js"

guardRepeatedSignals()

const StreamWorkersHere = Layer.unwrapEffect(
  Effect.map(AppConfig, (config) =>
    isEmbeddedDatabase(config) || !config.streamWorkerThread
      ? StreamWorkersLive
      : workerThreadLayer(
          "stream-worker",
          new URL("../stream-worker/thread.mjs", import.meta.url),
          Duration.seconds(config.shutdownDrainSeconds + 10)
        )
  )
)

Layer.mergeAll(HttpServerLive, StreamWorkersHere).pipe(
  Layer.provide(PlatformLive),
  Layer.provideMerge(lifecycleLog("all-in-one")),
  Layer.provide(LoggingLive),
  Layer.launch,
  NodeRuntime.runMain({ disablePrettyLogger: true })
)
