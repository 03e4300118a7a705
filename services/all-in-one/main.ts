/**
 * API and stream workers in one process (what `npm start` runs). Over
 * PostgreSQL the stream workers run in a worker thread (their own event loop
 * and core; STREAM_WORKER_THREAD=false keeps them on the API's); over the
 * embedded database everything shares one thread. The outbox relay runs
 * beside the stream workers.
 */
import { Duration, Effect, Layer } from "effect"
import { AppConfig, isEmbeddedDatabase } from "../../src/platform/Config.js"
import { guardRepeatedSignals, lifecycleLog } from "../../src/platform/Lifecycle.js"
import { TracingLive } from "../../src/operations/Tracing.js"
import { LoggingLive } from "../../src/platform/Logging.js"
import { OutboxRelayLive } from "../../src/platform/Outbox.js"
import { PlatformCoreLive } from "../../src/platform/Platform.js"
import { runService } from "../../src/platform/StartupFailure.js"
import { workerThreadLayer } from "../../src/platform/WorkerThread.js"
import { HttpServerLive } from "../../src/Server.js"
import { StreamWorkersLive } from "../../src/StreamWorkers.js"

guardRepeatedSignals()

const StreamWorkersHere = Layer.unwrapEffect(
  Effect.map(AppConfig, (config) =>
    isEmbeddedDatabase(config) || !config.streamWorkerThread
      ? Layer.merge(StreamWorkersLive, OutboxRelayLive)
      : // The thread also relays the outbox (woken by the API thread's writes), keeping Kafka's producer off the API's loop.
        workerThreadLayer(
          "stream-worker",
          new URL("../stream-worker/thread.mjs", import.meta.url),
          Duration.seconds(config.shutdownDrainSeconds + 10)
        )
  )
)

Layer.mergeAll(HttpServerLive, StreamWorkersHere).pipe(
  Layer.provide(PlatformCoreLive),
  Layer.provideMerge(lifecycleLog("all-in-one")),
  Layer.provide(TracingLive),
  Layer.provide(LoggingLive),
  Layer.launch,
  runService
)
