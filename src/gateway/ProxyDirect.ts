/**
 * The gateway proxy's direct path (a fast-lane `DirectHandler`): a call
 * whose every lookup is warm in memory is proxied with plain callbacks, no
 * fiber. It needs a cached runtime key, open feature flags, the cached route,
 * the model's cached price and, under a budget, a worst case this process's
 * budget lease can cover. Anything else (a cold cache, soft admission, any
 * error to answer before the upstream call) is left to the Effect path
 * (Proxy.ts) before anything is done, and that path warms the caches. Both
 * share the call's steps (Calls.ts), so they answer and record alike.
 *
 * On a 2-core box the Effect path costs about 0.8 ms of CPU per call in the
 * API's thread and this one about a third of that (docs/BENCHMARKS.md).
 */
import { Effect, Either, Option, Runtime, Schema } from "effect"
import type { Reservation } from "../billing/Budgets.js"
import { costOf } from "../billing/Pricing.js"
import type { DirectAuthenticator } from "../identity/AuthenticationLive.js"
import { type DirectHandler, writeHttpError, writePlatformResponse } from "../http/Lane.js"
import { withMessagesDialectKey } from "../http/Pipeline.js"
import { RoutePath } from "./Api.js"
import {
  finishedCall,
  type Outcome,
  outputBound,
  planCall,
  providerBody,
  respond,
  upstreamFailure,
  upstreamHeaders,
  upstreamUrl
} from "./Calls.js"
import type { ProxyDependencies } from "./ProxyDependencies.js"
import {
  isUpstreamFailure,
  sendUpstream,
  type UpstreamFailure,
  type UpstreamResponse,
  UpstreamUnreachable
} from "./Upstream.js"
import { type Dialect, UsageMeter } from "./UsageMeter.js"

const routePathOf = Schema.decodeUnknownOption(RoutePath)

/** The direct path over the Effect path's own dependencies (one set of caches, leases, slots and writer). */
export const makeDirectProxy = (dependencies: ProxyDependencies, runtime: Runtime.Runtime<never>) => {
  const { connections, pricing, budgets, writer, slots, timeoutMillis, limits, holdFor, connectGuard } = dependencies
  const runFork = Runtime.runFork(runtime)

  return (authenticate: DirectAuthenticator, dialect: Dialect): DirectHandler =>
    (request, response, answered) => {
      // Everything up to the admission only looks: a miss leaves the request, untouched, to the Effect path.
      const caller = authenticate(request, withMessagesDialectKey(request.headers, request.route))
      if (caller === undefined) return false
      const path = routePathOf(request.params)
      if (Option.isNone(path)) return false
      const routeId = path.value.id
      const target = connections.peekTarget(caller.workspaceId, routeId)
      if (target === undefined) return false
      const body = providerBody(request.body)
      if (Either.isLeft(body)) return false
      const plan = planCall(dialect, body.right, request.text, target)
      if (Either.isLeft(plan)) return false
      const price = pricing.peekPrice(caller.workspaceId, plan.right.model)
      const budget = budgets.peekBudget(caller.workspaceId)
      if (price === undefined || budget === undefined) return false
      let worstCase: bigint | undefined
      if (Option.isSome(budget)) {
        const bound = outputBound(dialect, body.right)
        if (Option.isNone(price) || Option.isNone(bound)) return false
        worstCase = costOf(price.value, plan.right.payload.byteLength, bound.value).usdNanos
      }
      // At a cap the Effect path answers the 429.
      const release = slots.tryTake(caller)
      if (release === undefined) return false
      let reservation = Option.none<Reservation>()
      if (Option.isSome(budget) && worstCase !== undefined) {
        const drawn = budgets.reserveFromLease(caller.workspaceId, budget.value, worstCase, holdFor)
        if (drawn === undefined) {
          release()
          return false
        }
        reservation = Option.some(drawn)
      }

      // Admitted: from here this path answers, and the call is recorded when the response closes.
      const { model, stream, payload, apiKey } = plan.right
      const meter = new UsageMeter(dialect, payload.byteLength, limits.maxLineBytes)
      const outcome: Outcome = { status: null, error: null, ended: false }
      let closed = false
      const settle = (result: UpstreamResponse | UpstreamFailure) => {
        if (closed) return
        try {
          if (isUpstreamFailure(result)) {
            answered(writeHttpError(response, upstreamFailure(result, outcome), request.requestId))
            return
          }
          const answer = respond(result, meter, outcome, limits)
          writePlatformResponse(response, answer, request.requestId)
          answered(answer.status)
        } catch (defect) {
          // Never thrown into Node's event loop: logged, and the client's connection closed (the call is recorded).
          runFork(Effect.logError("gateway direct path failed after admission", defect))
          response.destroy()
        }
      }
      let abort = () => {}
      try {
        abort = sendUpstream(
          upstreamUrl(dialect, target),
          upstreamHeaders(dialect, apiKey, request.headers),
          payload,
          timeoutMillis,
          connectGuard,
          settle
        )
      } catch (error) {
        // Admitted already: answer and record as an unreachable provider rather than leave the request.
        settle(new UpstreamUnreachable({ reason: error instanceof Error ? error.message : String(error) }))
      }
      response.once("close", () => {
        // The response is out, or the client left mid-call: that aborts the upstream call, as on the Effect path.
        closed = true
        abort()
        release()
        writer.offer(
          finishedCall({
            caller,
            dialect,
            routeId,
            target,
            requestId: request.requestId,
            model,
            stream,
            price,
            reservation,
            meter,
            outcome
          })
        )
      })
      return true
    }
}
