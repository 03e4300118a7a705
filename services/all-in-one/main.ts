/** API and stream worker in one process (what `npm start` runs). */
import { NodeRuntime } from "@effect/platform-node"
import { Layer } from "effect"
import { guardRepeatedSignals, lifecycleLog } from "../../src/platform/Lifecycle.js"
import { LoggingLive } from "../../src/platform/Logging.js"
import { PlatformLive } from "../../src/platform/Platform.js"
import { HttpServerLive } from "../../src/Server.js"
import { StreamWorkersLive } from "../../src/StreamWorkers.js"

guardRepeatedSignals()

Layer.mergeAll(HttpServerLive, StreamWorkersLive).pipe(
  Layer.provide(PlatformLive),
  Layer.provideMerge(lifecycleLog("all-in-one")),
  Layer.provide(LoggingLive),
  Layer.launch,
  NodeRuntime.runMain({ disablePrettyLogger: true })
)
