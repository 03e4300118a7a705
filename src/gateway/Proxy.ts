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
import { type Headers, HttpServerResponse } from "@effect/platform"
import { Duration, Effect, FiberRef, HashMap, Option, Redacted } from "effect"
import { Transform } from "node:stream"
import type { LlmUsageMessage } from "../billing/Domain.js"
import { Budgets, type Reservation } from "../billing/Budgets.js"
import { costOf, type ModelPrice, Pricing } from "../billing/Pricing.js"
import { CurrentCaller } from "../identity/Authentication.js"
import { AppConfig } from "../platform/Config.js"
import { BadGateway, BadRequest, GatewayTimeout, PaymentRequired } from "../platform/Errors.js"
import { prefixedId } from "../platform/Ids.js"
import { Connections } from "./Connections.js"
import { callUpstream, type UpstreamResponse } from "./Upstream.js"
import { type Dialect, UsageMeter } from "./UsageMeter.js"
import { UsageWriter } from "./UsageWriter.js"

const ANTHROPIC_VERSION = "2023-06-01"

/** Upstream response headers worth passing on (rate limits, provider request ids); never cookies. */
const FORWARDED_HEADER = /^(retry-after|cache-control|request-id|openai-[a-z-]+|anthropic-[a-z-]+|x-ratelimit-[a-z-]+)$/

const badBody = (path: string, message: string) =>
  new BadRequest({ code: "validation_failed", message: `${path}: ${message}`, details: [{ path, message }] })

const positiveInt = (value: unknown) =>
  typeof value === "number" && Number.isSafeInteger(value) && value > 0 ? Option.some(value) : Option.none()

/** The output bound that makes admission strict: `max_tokens` (chat also `max_completion_tokens`). */
const outputBound = (dialect: Dialect, body: Record<string, unknown>) =>
  dialect === "chat"
    ? Option.orElse(positiveInt(body["max_completion_tokens"]), () => positiveInt(body["max_tokens"]))
    : positiveInt(body["max_tokens"])

/** What became of the upstream call: its status, a transport error, and whether its body was read to the end. */
interface Outcome {
  status: number | null
  error: string | null
  ended: boolean
}

const currentRequestId = Effect.map(FiberRef.get(FiberRef.currentLogAnnotations), (annotations) =>
  Option.match(HashMap.get(annotations, "request_id"), {
    onNone: () => prefixedId("req"),
    onSome: (value) => String(value)
  })
)

/** What the proxy reads of a client's request (from the router or the fast lane). */
export interface ProxyRequest {
  readonly text: string
  readonly headers: Headers.Headers
}

const upstreamHeaders = (
  dialect: Dialect,
  key: Redacted.Redacted<string>,
  incoming: Headers.Headers
): Record<string, string> => {
  const headers: Record<string, string> = {
    "content-type": "application/json",
    accept: incoming["accept"] ?? "application/json, text/event-stream",
    "accept-encoding": "identity"
  }
  if (dialect === "chat") {
    headers["authorization"] = `Bearer ${Redacted.value(key)}`
  } else {
    headers["x-api-key"] = Redacted.value(key)
    headers["anthropic-version"] = incoming["anthropic-version"] ?? ANTHROPIC_VERSION
    const beta = incoming["anthropic-beta"]
    if (beta !== undefined) headers["anthropic-beta"] = beta
  }
  return headers
}

const responseHeaders = (upstream: UpstreamResponse) => {
  const headers: Record<string, string> = {}
  for (const [name, value] of Object.entries(upstream.headers)) {
    if (value !== undefined && FORWARDED_HEADER.test(name)) headers[name] = Array.isArray(value) ? value.join(", ") : value
  }
  const upstreamId = upstream.headers["x-request-id"]
  if (typeof upstreamId === "string") headers["x-upstream-request-id"] = upstreamId
  return headers
}

export class GatewayProxy extends Effect.Service<GatewayProxy>()("gateway/GatewayProxy", {
  effect: Effect.gen(function* () {
    const connections = yield* Connections
    const pricing = yield* Pricing
    const budgets = yield* Budgets
    const writer = yield* UsageWriter
    const config = yield* AppConfig
    const timeoutMillis = config.gatewayUpstreamTimeoutMillis
    // A reservation outlives any call the upstream timeout lets through; a dead process's is swept after it.
    const holdFor = Duration.millis(2 * timeoutMillis + 60_000)

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
        if (Option.isNone(price)) {
          return yield* new PaymentRequired({
            code: "model_unpriced",
            message: `Model ${model} has no price in this workspace, so a request under the active LLM budget cannot be admitted; set one with PUT /v1/llm-pricing/{model}.`,
            details: [{ path: "model", message: "no price set" }]
          })
        }
        const bound = outputBound(dialect, body)
        if (Option.isNone(bound)) {
          yield* budgets.admitSoft(workspaceId, budget.value)
          return Option.none<Reservation>()
        }
        // Every prompt token is at least one byte of the request body, so its size bounds the prompt.
        const worstCase = costOf(price.value, requestBytes, bound.value).usdNanos
        return Option.some(yield* budgets.reserve(workspaceId, budget.value, worstCase, holdFor))
      })

    const record = (input: {
      readonly workspaceId: string
      readonly dialect: Dialect
      readonly routeId: string
      readonly agentId: string
      readonly connectionId: string
      readonly requestId: string
      readonly model: string
      readonly price: Option.Option<ModelPrice>
      readonly reservation: Option.Option<Reservation>
      readonly meter: UsageMeter
      readonly stream: boolean
      readonly outcome: Outcome
    }) =>
      Effect.gen(function* () {
        const caller = yield* CurrentCaller
        const usage = input.meter.finish()
        const cost = Option.match(input.price, {
          onNone: () => ({ usdNanos: 0n, minor: 0 }),
          onSome: (price) => costOf(price, usage.promptTokens, usage.completionTokens)
        })
        const at = new Date()
        const message: LlmUsageMessage = {
          schema_version: 1,
          id: prefixedId("llmu"),
          workspace_id: input.workspaceId,
          api_key_id: caller.apiKeyId,
          principal_id: caller.principalId,
          request_id: input.requestId,
          kind: "customer_inference",
          model: input.model,
          prompt_tokens: usage.promptTokens,
          completion_tokens: usage.completionTokens,
          currency: "usd",
          cost_minor: cost.minor,
          cost_usd_nanos: cost.usdNanos.toString(),
          effective_at: at.toISOString(),
          metadata: {
            source: "gateway",
            dialect: input.dialect === "chat" ? "chat_style" : "messages_style",
            route_id: input.routeId,
            provider_connection_id: input.connectionId,
            stream: input.stream,
            upstream_status: input.outcome.status,
            upstream_error: input.outcome.error,
            usage_complete: usage.complete,
            usage_estimated: usage.estimated,
            cut_short: input.outcome.status !== null && !input.outcome.ended
          },
          unpriced: Option.isNone(input.price),
          agent_id: input.agentId
        }
        yield* writer.submit({
          message,
          settlement: { workspaceId: input.workspaceId, reservation: input.reservation, actual: cost.usdNanos, at }
        })
      }).pipe(Effect.catchAllCause((cause) => Effect.logError("could not record gateway LLM usage", cause)))

    /** One call through route `routeId`: the request's body as sent, and its headers. */
    const forward = (dialect: Dialect, routeId: string, request: ProxyRequest) =>
      Effect.gen(function* () {
        const caller = yield* CurrentCaller
        const workspaceId = caller.workspaceId
        const requestId = yield* currentRequestId
        const text = request.text
        const parsed = yield* Effect.try({
          try: (): unknown => (text.trim() === "" ? undefined : JSON.parse(text)),
          catch: () => new BadRequest({ code: "malformed_json", message: "The request body is not valid JSON." })
        })
        if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
          return yield* badBody("body", "expected a JSON object (a provider request)")
        }
        const body = parsed as Record<string, unknown>
        const requested = typeof body["model"] === "string" && body["model"].trim() !== "" ? body["model"] : undefined
        // One after the other: both answer from 1 s caches almost always, where forking would cost more.
        const target = yield* connections.target(workspaceId, routeId)
        const requestedPrice =
          requested === undefined ? Option.none<ModelPrice>() : yield* pricing.priceOf(workspaceId, requested)
        let changed = false
        let model = requested
        let price = requestedPrice
        if (model === undefined) {
          if (target.defaultModel === null) {
            return yield* badBody("model", "required (or set default_model on the route's provider connection)")
          }
          model = target.defaultModel
          body["model"] = model
          changed = true
          price = yield* pricing.priceOf(workspaceId, model)
        }
        if (Option.isNone(target.apiKey)) {
          return yield* new BadGateway({
            code: "provider_credential_unreadable",
            message:
              "The provider key of this route's connection cannot be decrypted by this service; set it again with PATCH /v1/gateway/provider-connections/{id}."
          })
        }
        const stream = body["stream"] === true
        if (dialect === "chat" && stream) {
          const options = body["stream_options"]
          const current = typeof options === "object" && options !== null ? (options as Record<string, unknown>) : {}
          if (current["include_usage"] !== true) {
            body["stream_options"] = { ...current, include_usage: true }
            changed = true
          }
        }
        const payload = new TextEncoder().encode(changed ? JSON.stringify(body) : text)
        const reservation = yield* admit(workspaceId, dialect, body, model, price, payload.byteLength)

        const meter = new UsageMeter(dialect, payload.byteLength)
        const outcome: Outcome = { status: null, error: null, ended: false }
        let abort = () => {}
        // Runs when the request's scope closes: after the last byte went out, or when the client left.
        yield* Effect.addFinalizer(() =>
          Effect.suspend(() => {
            abort()
            return record({
              workspaceId,
              dialect,
              routeId,
              agentId: target.agentId,
              connectionId: target.connectionId,
              requestId,
              model,
              price,
              reservation,
              meter,
              stream,
              outcome
            }).pipe(Effect.provideService(CurrentCaller, caller))
          })
        )
        const url = new URL(`${target.baseUrl}${dialect === "chat" ? "/chat/completions" : "/v1/messages"}`)
        const upstream = yield* callUpstream(
          url,
          upstreamHeaders(dialect, target.apiKey.value, request.headers),
          payload,
          timeoutMillis
        ).pipe(
          Effect.tapError((error) =>
            Effect.sync(() => {
              outcome.error = error._tag === "UpstreamTimeout" ? "timeout" : error.reason
            })
          ),
          Effect.catchTags({
            UpstreamTimeout: (error) =>
              new GatewayTimeout({
                code: "upstream_timeout",
                message: `The provider did not answer within ${error.afterMillis} ms.`
              }),
            UpstreamUnreachable: () =>
              new BadGateway({ code: "upstream_unreachable", message: "The provider could not be reached." })
          })
        )
        abort = upstream.abort
        outcome.status = upstream.status
        return respond(upstream, meter, outcome)
      })

    return { forward }
  }),
  dependencies: [Connections.Default, Pricing.Default, Budgets.Default, UsageWriter.Default]
}) {}

/** The client's response: the upstream body streamed through the meter, or an error body. */
const respond = (upstream: UpstreamResponse, meter: UsageMeter, outcome: Outcome) => {
  const contentType = upstream.headers["content-type"]
  meter.contentType(contentType)
  const headers = responseHeaders(upstream)
  if (upstream.status === 401 || upstream.status === 403) {
    outcome.ended = true
    upstream.abort()
    return HttpServerResponse.unsafeJson(
      {
        error: {
          code: "provider_auth_failed",
          message: `The provider refused this route's credentials (HTTP ${upstream.status}); check the connection's provider_api_key.`
        }
      },
      { status: 502, headers }
    )
  }
  const status = upstream.status >= 500 ? 502 : upstream.status
  const length = upstream.headers["content-length"]
  if (upstream.status >= 500 && (length === "0" || (length === undefined && contentType === undefined))) {
    outcome.ended = true
    upstream.abort()
    return HttpServerResponse.unsafeJson(
      { error: { code: "upstream_error", message: `The provider failed (HTTP ${upstream.status}) without a body.` } },
      { status: 502, headers }
    )
  }
  // Node pipes the body to the client (backpressure from the client's socket) through the meter: no
  // fiber work per chunk. Headers are out: a body that breaks off just ends the response (the meter
  // keeps what it saw).
  const metered = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      meter.onChunk(chunk)
      done(null, chunk)
    }
  })
  upstream.body.once("end", () => void (outcome.ended = true))
  upstream.body.once("error", (error) => {
    outcome.error = error.message
    if (!metered.destroyed) metered.end()
  })
  upstream.body.pipe(metered)
  return HttpServerResponse.raw(metered, {
    status,
    headers,
    contentType: contentType ?? "application/octet-stream",
    ...(length !== undefined && upstream.status < 500 ? { contentLength: Number(length) } : {})
  })
}
