/** What both proxy paths (Proxy.ts and ProxyDirect.ts) work with: routes, prices, budgets, the usage writer and the timeout. */
import { Duration, Effect } from "effect"
import { Budgets } from "../billing/Budgets.js"
import { Pricing } from "../billing/Pricing.js"
import { AppConfig } from "../platform/Config.js"
import { reservationHold } from "./Calls.js"
import { Connections } from "./Connections.js"
import { UsageWriter } from "./UsageWriter.js"

export const proxyDependencies = Effect.gen(function* () {
  const config = yield* AppConfig
  const timeoutMillis = config.gatewayUpstreamTimeoutMillis
  return {
    connections: yield* Connections,
    pricing: yield* Pricing,
    budgets: yield* Budgets,
    writer: yield* UsageWriter,
    timeoutMillis,
    // A reservation outlives any call the upstream timeout lets through; a dead process's is swept after it.
    holdFor: Duration.millis(reservationHold(timeoutMillis))
  }
})
