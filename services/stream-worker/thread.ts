/** The stream workers as a worker thread of the all-in-one service (src/platform/WorkerThread.ts). */
import { Layer } from "effect"
import { lifecycleLog } from "../../src/platform/Lifecycle.js"
import { TracingLive } from "../../src/operations/Tracing.js"
import { LoggingLive } from "../../src/platform/Logging.js"
import { PlatformLive } from "../../src/platform/Platform.js"
import { runInWorkerThread, ThreadPriorityLive } from "../../src/platform/WorkerThread.js"
import { StreamWorkersLive } from "../../src/StreamWorkers.js"

runInWorkerThread(
  Layer.merge(StreamWorkersLive, ThreadPriorityLive).pipe(
    Layer.provide(PlatformLive),
    Layer.provideMerge(lifecycleLog("stream-worker thread")),
    Layer.provide(TracingLive),
    Layer.provide(LoggingLive),
    Layer.launch
  )
)
