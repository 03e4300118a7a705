/** Deployable API process: HTTP server plus the outbox relay. */
import { Layer } from "effect"
import { guardRepeatedSignals, lifecycleLog } from "../../src/platform/Lifecycle.js"
import { TracingLive } from "../../src/operations/Tracing.js"
import { LoggingLive } from "../../src/platform/Logging.js"
import { PlatformLive } from "../../src/platform/Platform.js"
import { runService } from "../../src/platform/StartupFailure.js"
import { HttpServerLive } from "../../src/Server.js"

guardRepeatedSignals()

HttpServerLive.pipe(
  Layer.provide(PlatformLive),
  Layer.provideMerge(lifecycleLog("api")),
  Layer.provide(TracingLive),
  Layer.provide(LoggingLive),
  Layer.launch,
  runService
)
