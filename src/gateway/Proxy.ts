/**
 * The gateway proxy: one request through a route to its provider.
 *
 * The request body goes upstream as sent, with the provider's credentials
 * (chat style: `Authorization: Bearer`; messages style: `x-api-key` and
 * `anthropic-version`). Two changes only: a chat-style stream is asked for
 * its usage (`stream_options.include_usage`), and a request without `model`
 * gets the connection's `default_model`. The answer streams back chunk by
 * chunk (piped by Node, which waits for the client to drain before reading
 * more), and a client that goes away aborts the upstream call.
 *
 * Admission is written once, as warm steps (src/platform/Warm.ts): the
 * route, the model's price and the workspace's budget from their caches, a
 * stream slot, and under a budget a reservation drawn from this process's
 * lease. From memory alone that is the fast lane's direct path; otherwise
 * the Effect path loads what a step needs (the route, the price, the
 * budget, a reservation from the ledger, or a soft admission) and runs the
 * same step again. Once admitted, the call is sent (`start`), and when the
 * response has closed (answer out, or client gone) the call's `llm-usage`
 * event and budget settlement go to the UsageWriter, which commits them
 * together: after the last byte went out, so nothing is added to latency.
 */
import type * as Headers from "@effect/platform/Headers"
import type * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Duration, Effect, Either, Exit, Option } from "effect"
import { Budgets, type LlmBudget, type Reservation } from "../billing/Budgets.js"
import { costOf, type ModelPrice, Pricing } from "../billing/Pricing.js"
import { type HttpError, PaymentRequired } from "../http/Errors.js"
import type { Caller } from "../identity/Authentication.js"
import { AppConfig } from "../platform/Config.js"
import { OutboundGuard } from "../platform/OutboundGuard.js"
import { type Answer, hotUseCase, needs, ready, refused, type Warm, type WarmSteps } from "../platform/Warm.js"
import {
  type CallPlan,
  finishedCall,
  type Outcome,
  outputBound,
  planCall,
  providerBody,
  reservationHold,
  respond,
  type StreamLimits,
  upstreamFailure,
  upstreamHeaders,
  upstreamUrl
} from "./Calls.js"
import { promptBound } from "./PromptBound.js"
import { Connections, type RouteTarget } from "./Connections.js"
import { StreamSlots } from "./StreamSlots.js"
import {
  isUpstreamFailure,
  sendUpstream,
  type UpstreamFailure,
  type UpstreamResponse,
  UpstreamUnreachable
} from "./Upstream.js"
import { type Dialect, UsageMeter } from "./UsageMeter.js"
import { UsageWriter } from "./UsageWriter.js"

/** One call through route `routeId`, as the client sent it. */
export interface ProxyRequest {
  readonly caller: Caller
  readonly dialect: Dialect
  readonly routeId: string
  readonly requestId: string
  /** The body as sent, and parsed. */
  readonly text: string
  readonly json: unknown
  readonly headers: Headers.Headers
  /**
   * Headers every answer to this call carries (the guardrails' decision): the provider's answer is built with
   * them, which spares copying the response to add them afterwards.
   */
  readonly answerHeaders?: Readonly<Record<string, string>> | undefined
}

/** The model an active budget cannot admit a call for, because it has no price. */
export const modelUnpriced = (model: string) =>
  new PaymentRequired({
    code: "model_unpriced",
    message: `Model ${model} has no price in this workspace, so a request under the active LLM budget cannot be admitted; set one with PUT /v1/llm-pricing/{model}.`,
    details: [{ path: "model", message: "no price set" }]
  })

/** What admission read beyond the caches, and the admission the ledger gave (a reservation, or none when soft). */
interface Loaded {
  readonly target?: RouteTarget
  readonly price?: Option.Option<ModelPrice>
  readonly budget?: Option.Option<LlmBudget>
  readonly admitted?: Option.Option<Reservation>
}

type Need =
  | { readonly _tag: "route" | "budget" }
  | { readonly _tag: "price"; readonly model: string }
  | { readonly _tag: "soft"; readonly budget: LlmBudget }
  | { readonly _tag: "ledger"; readonly budget: LlmBudget; readonly worstCase: bigint }

/** An admitted call: holding its stream slot (`release`) and, under a strict budget, its reservation. */
interface Admitted {
  readonly target: RouteTarget
  readonly plan: CallPlan
  readonly price: Option.Option<ModelPrice>
  readonly reservation: Option.Option<Reservation>
  readonly release: () => void
}

export class GatewayProxy extends Effect.Service<GatewayProxy>()("gateway/GatewayProxy", {
  effect: Effect.gen(function* () {
    const config = yield* AppConfig
    const connections = yield* Connections
    const pricing = yield* Pricing
    const budgets = yield* Budgets
    const writer = yield* UsageWriter
    const slots = yield* StreamSlots
    const connectGuard = (yield* OutboundGuard).connectOptions
    const timeoutMillis = config.gatewayUpstreamTimeoutMillis
    const limits: StreamLimits = {
      maxStreamMillis: config.gatewayMaxStreamSeconds * 1000,
      maxLineBytes: config.gatewaySseMaxLineBytes
    }
    // A reservation outlives any call the upstream timeout and stream limit let through; a dead process's is swept after it.
    const holdFor = Duration.millis(reservationHold(timeoutMillis, limits.maxStreamMillis))

    const steps = (request: ProxyRequest): WarmSteps<Loaded, Admitted, HttpError, Need, HttpError, never> => ({
      step: (loaded): Warm<Admitted, HttpError, Need> => {
        const { caller, dialect } = request
        const workspaceId = caller.workspaceId
        const target = loaded.target ?? connections.peekTarget(workspaceId, request.routeId)
        if (target === undefined) return needs({ _tag: "route" })
        // A copy: completing the request (default model, streamed usage) must not change what a later step reads.
        const body = providerBody(request.json)
        if (Either.isLeft(body)) return refused(body.left)
        const copy = { ...body.right }
        const plan = planCall(dialect, copy, request.text, target)
        if (Either.isLeft(plan)) return refused(plan.left)
        const price = loaded.price ?? pricing.peekPrice(workspaceId, plan.right.model)
        if (price === undefined) return needs({ _tag: "price", model: plan.right.model })
        const budget = loaded.budget ?? budgets.peekBudget(workspaceId)
        if (budget === undefined) return needs({ _tag: "budget" })
        // Taken before admission, so a refusal has nothing to undo; given back on every way out but `Ready`.
        const release = slots.tryTake(caller)
        if (release === undefined) return refused(slots.refusal(caller))
        const admit = (reservation: Option.Option<Reservation>) =>
          ready({ target, plan: plan.right, price, reservation, release })
        const without = <A>(result: A) => {
          release()
          return result
        }
        if (Option.isNone(budget)) return admit(Option.none())
        if (Option.isNone(price)) return without(refused(modelUnpriced(plan.right.model)))
        if (loaded.admitted !== undefined) return admit(loaded.admitted)
        const bound = outputBound(dialect, copy)
        if (Option.isNone(bound)) return without(needs({ _tag: "soft", budget: budget.value }))
        const prompt = promptBound(copy, plan.right.payload.byteLength, config.gatewayReferencedPartTokens)
        const worstCase = costOf(price.value, prompt, bound.value).usdNanos
        const drawn = budgets.reserveFromLease(workspaceId, budget.value, worstCase, holdFor)
        return drawn === undefined
          ? without(needs({ _tag: "ledger", budget: budget.value, worstCase }))
          : admit(Option.some(drawn))
      },
      load: (need, loaded) => {
        const workspaceId = request.caller.workspaceId
        switch (need._tag) {
          case "route":
            return Effect.map(connections.target(workspaceId, request.routeId), (target) => ({ ...loaded, target }))
          case "price":
            return Effect.map(pricing.priceOf(workspaceId, need.model), (price) => ({ ...loaded, price }))
          case "budget":
            return Effect.map(budgets.activeBudget(workspaceId), (budget) => ({ ...loaded, budget }))
          case "soft":
            return Effect.as(budgets.admitSoft(workspaceId, need.budget), { ...loaded, admitted: Option.none() })
          case "ledger":
            return Effect.map(budgets.reserve(workspaceId, need.budget, need.worstCase, holdFor), (reservation) => ({
              ...loaded,
              admitted: Option.some(reservation)
            }))
        }
      },
      // A reservation taken from the ledger for a call then refused (its stream slot was gone) goes back.
      abandon: (loaded) =>
        loaded.admitted === undefined || Option.isNone(loaded.admitted)
          ? Effect.void
          : budgets.settle([
              { workspaceId: request.caller.workspaceId, reservation: loaded.admitted, actual: 0n, at: new Date() }
            ])
    })

    /** Sends the admitted call; answers the provider's answer (or failure); records it when the response closed. */
    const start = (
      request: ProxyRequest,
      admitted: Admitted,
      answer: Answer<HttpServerResponse.HttpServerResponse, HttpError>
    ) => {
      const { caller, dialect, routeId, requestId } = request
      const { target, plan } = admitted
      const meter = new UsageMeter(dialect, plan.payload.byteLength, limits.maxLineBytes)
      const outcome: Outcome = { status: null, error: null, ended: false }
      let closed = false
      const settle = (result: UpstreamResponse | UpstreamFailure) => {
        if (closed) return
        try {
          answer(
            isUpstreamFailure(result)
              ? Exit.fail(upstreamFailure(result, outcome))
              : Exit.succeed(respond(result, meter, outcome, limits, request.answerHeaders))
          )
        } catch (defect) {
          answer(Exit.die(defect))
        }
      }
      let abort = () => {}
      try {
        abort = sendUpstream(
          upstreamUrl(dialect, target),
          upstreamHeaders(dialect, plan.apiKey, request.headers),
          plan.payload,
          timeoutMillis,
          connectGuard,
          settle
        )
      } catch (error) {
        // Admitted already: answer and record as an unreachable provider.
        settle(new UpstreamUnreachable({ reason: error instanceof Error ? error.message : String(error) }))
      }
      // Once the response has closed (last byte out, or client gone mid-call, which aborts the provider call).
      return () => {
        if (closed) return
        closed = true
        abort()
        admitted.release()
        writer.enqueue(
          finishedCall({
            caller,
            dialect,
            routeId,
            target,
            requestId,
            model: plan.model,
            stream: plan.stream,
            price: admitted.price,
            reservation: admitted.reservation,
            meter,
            outcome
          })
        )
      }
    }

    return { forward: hotUseCase({ name: "GatewayProxy.forward", initial: {}, steps, act: start }) }
  }),
  dependencies: [
    Connections.Default,
    Pricing.Default,
    Budgets.Default,
    UsageWriter.Default,
    StreamSlots.Default,
    OutboundGuard.Default
  ]
}) {}
