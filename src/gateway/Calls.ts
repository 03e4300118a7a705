/**
 * The pure parts of one proxied call (Proxy.ts): reading the provider
 * request, completing it (default model, streamed usage), the upstream
 * headers, the client's answer, and the call's usage record.
 */
import type * as Headers from "@effect/platform/Headers"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Either, Option, Redacted } from "effect"
import { finished, PassThrough } from "node:stream"
import type { Settlement } from "../billing/Budgets.js"
import type { LlmUsageMessage } from "../billing/Domain.js"
import { costOf, MAX_MODEL_LENGTH, type ModelPrice } from "../billing/Pricing.js"
import type { Caller } from "../identity/Authentication.js"
import { BadGateway, BadRequest, GatewayTimeout } from "../http/Errors.js"
import { prefixedId, uuidv7 } from "../platform/Ids.js"
import type { RouteTarget } from "./Connections.js"
import type { UpstreamFailure, UpstreamResponse } from "./Upstream.js"
import type { Dialect, UsageMeter } from "./UsageMeter.js"

const ANTHROPIC_VERSION = "2023-06-01"

/** Upstream response headers worth passing on (rate limits, provider request ids); never cookies. */
const FORWARDED_HEADER = /^(retry-after|cache-control|request-id|openai-[a-z-]+|anthropic-[a-z-]+|x-ratelimit-[a-z-]+)$/

const badBody = (path: string, message: string) =>
  new BadRequest({ code: "validation_failed", message: `${path}: ${message}`, details: [{ path, message }] })

const positiveInt = (value: unknown) =>
  typeof value === "number" && Number.isSafeInteger(value) && value > 0 ? Option.some(value) : Option.none()

/**
 * The output bound that makes admission strict: `max_tokens` (chat also `max_completion_tokens`), which chat
 * applies to each of its `n` choices (the provider bills them all). An `n` that is not a count leaves no bound.
 */
export const outputBound = (dialect: Dialect, body: Record<string, unknown>) => {
  if (dialect === "messages") return positiveInt(body["max_tokens"])
  const perChoice = Option.orElse(positiveInt(body["max_completion_tokens"]), () => positiveInt(body["max_tokens"]))
  const choices = body["n"] == null ? Option.some(1) : positiveInt(body["n"])
  return Option.zipWith(perChoice, choices, (tokens, count) => tokens * count)
}

/** How long a strict call's reservation is held: longer than any call the upstream timeout and stream limit let through. */
export const reservationHold = (upstreamTimeoutMillis: number, maxStreamMillis: number) =>
  upstreamTimeoutMillis + maxStreamMillis + 60_000

/** Bounds of a proxied answer: how long it may stream, and the longest SSE line the meter holds. */
export interface StreamLimits {
  readonly maxStreamMillis: number
  readonly maxLineBytes: number
}

/** What became of the upstream call: its status, a transport error, and whether its body was read to the end. */
export interface Outcome {
  status: number | null
  error: string | null
  ended: boolean
}

/** The provider request as a JSON object, or the 400 for anything else. */
export const providerBody = (parsed: unknown): Either.Either<Record<string, unknown>, BadRequest> =>
  typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)
    ? Either.right(parsed as Record<string, unknown>)
    : Either.left(badBody("body", "expected a JSON object (a provider request)"))

/** A provider request completed for its route: the model it asks for and the bytes that go upstream. */
export interface CallPlan {
  readonly model: string
  readonly stream: boolean
  readonly payload: Uint8Array
  readonly apiKey: Redacted.Redacted<string>
}

/**
 * Completes `body` (changed in place) for `target`: the connection's default
 * model when the request names none, and for a chat-style stream the usage
 * report (`stream_options.include_usage`). The request goes upstream as sent
 * (`text`) unless something was added.
 */
export const planCall = (
  dialect: Dialect,
  body: Record<string, unknown>,
  text: string,
  target: RouteTarget
): Either.Either<CallPlan, BadRequest | BadGateway> => {
  let changed = false
  let model = typeof body["model"] === "string" && body["model"].trim() !== "" ? body["model"] : undefined
  // The raw string is the usage record's `model` and an analytics dimension (part of an index key): bounded as a price's.
  if (model !== undefined && model.length > MAX_MODEL_LENGTH) {
    return Either.left(badBody("model", `expected a model name of at most ${MAX_MODEL_LENGTH} characters`))
  }
  if (model === undefined) {
    if (target.defaultModel === null) {
      return Either.left(badBody("model", "required (or set default_model on the route's provider connection)"))
    }
    model = target.defaultModel
    body["model"] = model
    changed = true
  }
  if (Option.isNone(target.apiKey)) {
    return Either.left(
      new BadGateway({
        code: "provider_credential_unreadable",
        message:
          "The provider key of this route's connection cannot be decrypted by this service; set it again with PATCH /v1/gateway/provider-connections/{id}."
      })
    )
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
  const payload = Buffer.from(changed ? JSON.stringify(body) : text, "utf8")
  return Either.right({ model, stream, payload, apiKey: target.apiKey.value })
}

/** Where the call goes. */
export const upstreamUrl = (dialect: Dialect, target: RouteTarget) =>
  new URL(`${target.baseUrl}${dialect === "chat" ? "/chat/completions" : "/v1/messages"}`)

export const upstreamHeaders = (
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

/**
 * The answer for a call that ended before the upstream's response head, as
 * the HTTP error the client gets (`upstream` names it: "The provider", "The
 * MCP server"); notes why in `outcome`.
 */
export const upstreamFailure = (error: UpstreamFailure, outcome: Outcome, upstream = "The provider") => {
  outcome.error = error._tag === "UpstreamTimeout" ? "timeout" : error.reason
  switch (error._tag) {
    case "UpstreamTimeout":
      return new GatewayTimeout({
        code: "upstream_timeout",
        message: `${upstream} did not answer within ${error.afterMillis} ms.`
      })
    case "UpstreamRefused":
      return new BadGateway({
        code: "upstream_address_refused",
        message: `${upstream}'s address is not allowed for outbound calls (an internal address); see docs/outbound.md.`
      })
    case "UpstreamUnreachable":
      return new BadGateway({ code: "upstream_unreachable", message: `${upstream} could not be reached.` })
  }
}

const responseHeaders = (upstream: UpstreamResponse, extra: Readonly<Record<string, string>> | undefined) => {
  const headers: Record<string, string> = { ...extra }
  for (const [name, value] of Object.entries(upstream.headers)) {
    if (value !== undefined && FORWARDED_HEADER.test(name))
      headers[name] = Array.isArray(value) ? value.join(", ") : value
  }
  const upstreamId = upstream.headers["x-request-id"]
  if (typeof upstreamId === "string") headers["x-upstream-request-id"] = upstreamId
  return headers
}

/**
 * The dialect's in-stream error event, for a stream the gateway ends itself (what the official SDKs raise as
 * an error). It starts with a blank line, which ends whatever partial line or event went out before it.
 */
const streamErrorEvent = (dialect: Dialect, code: string, message: string) =>
  dialect === "chat"
    ? `\n\ndata: ${JSON.stringify({ error: { message, type: "server_error", code } })}\n\n`
    : `\n\nevent: error\ndata: ${JSON.stringify({ type: "error", error: { type: "api_error", message, code } })}\n\n`

/**
 * The client's response: the upstream body streamed through the meter, or an error body; `extra` headers
 * (ProxyRequest's `answerHeaders`) go on both.
 */
export const respond = (
  upstream: UpstreamResponse,
  meter: UsageMeter,
  outcome: Outcome,
  limits: StreamLimits,
  extra?: Readonly<Record<string, string>>
) => {
  outcome.status = upstream.status
  const contentType = upstream.headers["content-type"]
  meter.contentType(contentType)
  const headers = responseHeaders(upstream, extra)
  if (upstream.status >= 300 && upstream.status < 400) {
    // Redirects are never followed (the Location could name an internal host): an upstream error.
    outcome.ended = true
    upstream.abort()
    return HttpServerResponse.unsafeJson(
      {
        error: {
          code: "upstream_redirect",
          message: `The provider answered HTTP ${upstream.status}, a redirect; the gateway does not follow redirects, so set the connection's base_url to the final address.`
        }
      },
      { status: 502, ...(extra === undefined ? {} : { headers: extra }) }
    )
  }
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
  // Node pipes the body to the client (backpressure from the client's socket) while the meter watches
  // the same chunks go by: no fiber work per chunk. Headers are out: a body that breaks off just ends
  // the response (the meter keeps what it saw).
  const body = new PassThrough()
  // Its readers may attach later than it breaks off (they read it with stream.finished): never an uncaught error.
  body.on("error", () => {})
  /** Ends the answer early, aborting the provider call: an SSE stream with the dialect's error event. */
  const cut = (code: string, message: string) => {
    if (outcome.ended || body.writableEnded || body.destroyed) return
    outcome.error = code
    upstream.body.unpipe(body)
    upstream.abort()
    if (meter.isSse) body.end(streamErrorEvent(meter.dialect, code, message))
    else body.destroy(new Error(message))
  }
  const deadline = setTimeout(
    () =>
      cut(
        "stream_duration_exceeded",
        `The answer streamed for longer than ${limits.maxStreamMillis / 1000} s (GATEWAY_MAX_STREAM_SECONDS) and was ended by the gateway.`
      ),
    limits.maxStreamMillis
  )
  // A provider's answer that breaks off is not ended as if complete: a stream gets the dialect's error event, and
  // any other body is destroyed, so a client counting on its Content-Length is not left waiting for the rest.
  // `finished` also reports an answer that ended or broke off before this line ran (events already emitted).
  finished(upstream.body, (error) => {
    clearTimeout(deadline)
    if (error === undefined || error === null) {
      outcome.ended = true
      return
    }
    outcome.error ??= error.message
    if (body.writableEnded || body.destroyed) return
    if (meter.isSse) body.end(streamErrorEvent(meter.dialect, "upstream_error", "The provider's answer broke off."))
    else body.destroy(error)
  })
  upstream.body.pipe(body)
  // After the pipe's own listener, so a chunk that overflows is written before the stream is ended.
  upstream.body.on("data", (chunk: Buffer) => {
    meter.onChunk(chunk)
    if (meter.lineTooLong) {
      cut(
        "sse_line_too_long",
        `The provider sent a stream line longer than ${limits.maxLineBytes} bytes (GATEWAY_SSE_MAX_LINE_BYTES); the gateway ended the stream.`
      )
    }
  })
  return HttpServerResponse.raw(body, {
    status,
    headers,
    contentType: contentType ?? "application/octet-stream",
    ...(length !== undefined && upstream.status < 500 ? { contentLength: Number(length) } : {})
  })
}

/** Everything known of a call when it ends, for its usage record. */
export interface FinishedCallInput {
  readonly caller: Caller
  readonly dialect: Dialect
  readonly routeId: string
  readonly target: RouteTarget
  readonly requestId: string
  readonly model: string
  readonly stream: boolean
  readonly price: Option.Option<ModelPrice>
  readonly reservation: Settlement["reservation"]
  readonly meter: UsageMeter
  readonly outcome: Outcome
}

/** The call's `llm-usage` event, and its budget settlement at the actual cost. */
export const finishedCall = (input: FinishedCallInput) => {
  const { caller } = input
  const usage = input.meter.finish()
  const cost = Option.match(input.price, {
    onNone: () => ({ usdNanos: 0n, minor: 0 }),
    onSome: (price) => costOf(price, usage.promptTokens, usage.completionTokens)
  })
  const at = new Date()
  const message: LlmUsageMessage = {
    schema_version: 1,
    id: prefixedId("llmu"),
    workspace_id: caller.workspaceId,
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
      provider_connection_id: input.target.connectionId,
      stream: input.stream,
      upstream_status: input.outcome.status,
      upstream_error: input.outcome.error,
      usage_complete: usage.complete,
      usage_estimated: usage.estimated,
      cut_short: input.outcome.status !== null && !input.outcome.ended
    },
    unpriced: Option.isNone(input.price),
    agent_id: input.target.agentId
  }
  const settlement: Settlement = {
    workspaceId: caller.workspaceId,
    reservation: input.reservation,
    actual: cost.usdNanos,
    at
  }
  return { eventId: uuidv7(), message, settlement }
}
