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
 * When the response ends (or is cut), the request scope's finalizer hands
 * the call's `llm-usage` event and budget settlement to the UsageWriter,
 * which commits them together (outbox + ledger, group-committed). That
 * happens after the last byte went out, so it adds nothing to the client's
 * latency.
 */
import type { Headers } from "@effect/platform"
import { Effect, FiberRef, HashMap, Option } from "effect"
import { Budgets, type Reservation } from "../billing/Budgets.js"
import { costOf, type ModelPrice, Pricing } from "../billing/Pricing.js"
import type { Caller } from "../identity/Authentication.js"
import { BadRequest, PaymentRequired } from "../http/Errors.js"
import { prefixedId } from "../platform/Ids.js"
import { OutboundGuard } from "../platform/OutboundGuard.js"
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
import { Connections } from "./Connections.js"
import { proxyDependencies } from "./ProxyDependencies.js"
import { makeDirectProxy } from "./ProxyDirect.js"
import { StreamSlots } from "./StreamSlots.js"
import { callUpstream } from "./Upstream.js"
import { type Dialect, UsageMeter } from "./UsageMeter.js"
import { UsageWriter } from "./UsageWriter.js"

/** The request id the HTTP pipeline put in the log annotations. */
export const currentRequestId = Effect.map(FiberRef.get(FiberRef.currentLogAnnotations), (annotations) =>
  Option.match(HashMap.get(annotations, "request_id"), {
    onNone: () => prefixedId("req"),
    onSome: (value) => String(value)
  })
)

/** What the proxy reads of a client's request (from the router or the fast lane). */
export interface ProxyRequest {
  readonly caller: Caller
  readonly requestId: string
  readonly text: string
  readonly headers: Headers.Headers
  /** The body as JSON when the caller already parsed it (the fast lane), so it is not parsed twice. */
  readonly json?: { readonly value: unknown }
}

/** The model an active budget cannot admit a call for, because it has no price. */
export const modelUnpriced = (model: string) =>
  new PaymentRequired({
    code: "model_unpriced",
    message: `Model ${model} has no price in this workspace, so a request under the active LLM budget cannot be admitted; set one with PUT /v1/llm-pricing/{model}.`,
    details: [{ path: "model", message: "no price set" }]
  })

export class GatewayProxy extends Effect.Service<GatewayProxy>()("gateway/GatewayProxy", {
  effect: Effect.gen(function* () {
    const dependencies = yield* proxyDependencies
    const { connections, pricing, budgets, writer, slots, timeoutMillis, limits, holdFor, connectGuard } = dependencies

    /** Admission under the workspace's budget; answers the reservation of a strict request. */
    const admit = (
      workspaceId: string,
      dialect: Dialect,
      body: Record<string, unknown>,
      model: string,
      price: Option.Option<ModelPrice>,
      requestBytes: number
    ) =>
      Effect.gen(function* () {
        const budget = yield* budgets.activeBudget(workspaceId)
        if (Option.isNone(budget)) return Option.none<Reservation>()
        if (Option.isNone(price)) return yield* modelUnpriced(model)
        const bound = outputBound(dialect, body)
        if (Option.isNone(bound)) {
          yield* budgets.admitSoft(workspaceId, budget.value)
          return Option.none<Reservation>()
        }
        // Every prompt token is at least one byte of the request body, so its size bounds the prompt.
        const worstCase = costOf(price.value, requestBytes, bound.value).usdNanos
        return Option.some(yield* budgets.reserve(workspaceId, budget.value, worstCase, holdFor))
      })

    /** One call through route `routeId`: the request's body as sent, and its headers. */
    const forward = (dialect: Dialect, routeId: string, request: ProxyRequest) =>
      Effect.gen(function* () {
        const { caller, requestId, text } = request
        const workspaceId = caller.workspaceId
        const parsed =
          request.json !== undefined
            ? request.json.value
            : yield* Effect.try({
                try: (): unknown => (text.trim() === "" ? undefined : JSON.parse(text)),
                catch: () => new BadRequest({ code: "malformed_json", message: "The request body is not valid JSON." })
              })
        const body = yield* providerBody(parsed)
        const target = yield* connections.target(workspaceId, routeId)
        const plan = yield* planCall(dialect, body, text, target)
        const price = yield* pricing.priceOf(workspaceId, plan.model)
        // Held until the request's scope closes; taken before admission, so a refusal has nothing to undo.
        const release = slots.tryTake(caller)
        if (release === undefined) return yield* slots.refusal(caller)
        yield* Effect.addFinalizer(() => Effect.sync(release))
        const reservation = yield* admit(workspaceId, dialect, body, plan.model, price, plan.payload.byteLength)

        const meter = new UsageMeter(dialect, plan.payload.byteLength, limits.maxLineBytes)
        const outcome: Outcome = { status: null, error: null, ended: false }
        let abort = () => {}
        // Runs when the request's scope closes: after the last byte went out, or when the client left.
        yield* Effect.addFinalizer(() =>
          Effect.suspend(() => {
            abort()
            release()
            const call = finishedCall({
              caller,
              dialect,
              routeId,
              target,
              requestId,
              model: plan.model,
              stream: plan.stream,
              price,
              reservation,
              meter,
              outcome
            })
            return writer.submit(call)
          }).pipe(Effect.catchAllCause((cause) => Effect.logError("could not record gateway LLM usage", cause)))
        )
        const upstream = yield* callUpstream(
          upstreamUrl(dialect, target),
          upstreamHeaders(dialect, plan.apiKey, request.headers),
          plan.payload,
          timeoutMillis,
          connectGuard
        ).pipe(Effect.mapError((error) => upstreamFailure(error, outcome)))
        abort = upstream.abort
        return respond(upstream, meter, outcome, limits)
      })

    /** The direct path for warm calls (ProxyDirect.ts), over this service's caches, leases and writer. */
    const direct = makeDirectProxy(dependencies, yield* Effect.runtime<never>())

    return { forward, direct }
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
