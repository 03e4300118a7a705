/**
 * What both proxy paths (Proxy.ts and ProxyDirect.ts) work with: routes, prices, budgets, the usage writer,
 * the stream slots, the upstream timeout, the limits of a streamed answer and the outbound guard's connect-time check.
 */
import { Duration, Effect } from "effect"
import { Budgets } from "../billing/Budgets.js"
import { Pricing } from "../billing/Pricing.js"
import { AppConfig } from "../platform/Config.js"
import { OutboundGuard } from "../platform/OutboundGuard.js"
import { reservationHold, type StreamLimits } from "./Calls.js"
import { Connections } from "./Connections.js"
import { StreamSlots } from "./StreamSlots.js"
import { UsageWriter } from "./UsageWriter.js"

export const proxyDependencies = Effect.gen(function* () {
  const config = yield* AppConfig
  const timeoutMillis = config.gatewayUpstreamTimeoutMillis
  const limits: StreamLimits = {
    maxStreamMillis: config.gatewayMaxStreamSeconds * 1000,
    maxLineBytes: config.gatewaySseMaxLineBytes
  }
  const guard = yield* OutboundGuard
  return {
    connections: yield* Connections,
    pricing: yield* Pricing,
    budgets: yield* Budgets,
    writer: yield* UsageWriter,
    slots: yield* StreamSlots,
    timeoutMillis,
    limits,
    connectGuard: guard.connectOptions,
    // A reservation outlives any call the upstream timeout and stream limit let through; a dead process's is swept after it.
    holdFor: Duration.millis(reservationHold(timeoutMillis, limits.maxStreamMillis))
  }
})

export type ProxyDependencies = Effect.Effect.Success<typeof proxyDependencies>
