/**
 * The answer side of the gateway's guardrails (Guardrails.ts), in callback
 * code: a JSON answer read whole and decided, a streamed answer screened as
 * it passes (StreamScreen.ts), and what a refusal or a rewrite does to them.
 */
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Cause, Effect, Exit, Option } from "effect"
import { PassThrough, Readable } from "node:stream"
import { BadGateway, BadRequest, type HttpError } from "../http/Errors.js"
import { AppConfig } from "../platform/Config.js"
import { isScreenableObject, Limits } from "../platform/Schemas.js"
import { type Answer, catching } from "../platform/Warm.js"
import type { RouteTarget } from "./Connections.js"
import { type Decided, guardrailEvent, guardrailSummary, readBody, refusalIn } from "./GuardrailDecisions.js"
import {
  MAX_SCREENED_ITEMS,
  refusalEvent,
  refusalResponse,
  responseEvents,
  type Screened,
  unscreenableEvent
} from "./GuardrailTexts.js"
import type { ProxyRequest } from "./Proxy.js"
import { screenStream, type Verdict } from "./StreamScreen.js"

type Response = HttpServerResponse.HttpServerResponse

/** One screened call: what its decisions are made for. */
export interface Call {
  readonly request: ProxyRequest
  readonly target: RouteTarget
  readonly environmentId: string
  readonly scope: { readonly run_id?: string; readonly session_id?: string }
}

/** Decides events of the call; answers once their records are durable (what stands). */
export type DecideEvents = (events: ReadonlyArray<Screened>, answer: Answer<ReadonlyArray<Decided>, HttpError>) => void

const unscreenable = new BadGateway({
  code: "answer_not_screenable",
  message: `The provider's answer is not a JSON object nested at most ${Limits.body.depth} levels, so the route's output guardrails cannot screen it.`
})

const tooManyItems = new BadGateway({
  code: "too_many_screened_items",
  message: `The provider's answer holds more than ${MAX_SCREENED_ITEMS} replies and tool calls, more than the route's output guardrails screen in one answer.`
})

/** The request's refusal when it carries more to screen than one call decides (MAX_SCREENED_ITEMS). */
export const tooManyInputs = (count: number) =>
  count <= MAX_SCREENED_ITEMS
    ? undefined
    : new BadRequest({
        code: "too_many_screened_items",
        message: `The request carries ${count} messages to screen (the latest user message and the tool results after the last assistant turn); the route's input guardrails screen at most ${MAX_SCREENED_ITEMS}.`
      })

/** Drops a provider's answer that will not be passed on (the proxy then records its usage as it ended). */
export const discard = (response: Response) => {
  if (response.body._tag === "Raw" && response.body.body instanceof Readable) response.body.body.destroy()
}

/** The first enforced refusal among `decided`, as the dialect's 403. */
export const refusalOf = (
  request: ProxyRequest,
  decided: ReadonlyArray<Decided>,
  headers: Record<string, string>
): Response | undefined => {
  const refusal = refusalIn(decided)
  return refusal === undefined ? undefined : refusalResponse(request.dialect, refusal, headers)
}

/** Puts each enforced rewrite's text in place; answers whether anything changed. */
export const applyRewrites = (decided: ReadonlyArray<Decided>) => {
  let changed = false
  for (const { answer, mode, screened } of decided) {
    if (mode !== "enforce" || answer.effect !== "rewrite" || typeof answer.transformed_value !== "string") continue
    screened.replace?.(answer.transformed_value)
    changed = true
  }
  return changed
}

/** What a stream does after one window's decisions: pass (rewritten when enforced) or stop with an error event. */
const verdictOf = (call: Call, outcome: Exit.Exit<ReadonlyArray<Decided>, HttpError>): Verdict => {
  const { dialect } = call.request
  if (Exit.isSuccess(outcome)) {
    const refusal = refusalIn(outcome.value)
    if (refusal !== undefined) return { _tag: "stop", event: refusalEvent(dialect, refusal) }
    const rewrite = outcome.value.find((one) => one.mode === "enforce" && one.answer.effect === "rewrite")
    const text = rewrite?.answer.transformed_value
    return { _tag: "pass", rewritten: typeof text === "string" ? text : null }
  }
  // Nothing unscreened goes out after a failure: the stream ends with an error event (fail closed).
  return Option.match(Cause.failureOption(outcome.cause), {
    onSome: (error) => ({ _tag: "stop", event: unscreenableEvent(dialect, error.code, error.message) }),
    onNone: () => ({
      _tag: "stop",
      event: unscreenableEvent(dialect, "guardrail_unavailable", "The answer could not be screened.")
    })
  })
}

/** How a streamed answer is screened: its text windows, and the most of one event held (StreamScreen.ts). */
export const streamBounds = Effect.map(AppConfig, (config) => ({
  windowChars: config.gatewayGuardrailWindowChars,
  holdChars: config.gatewayGuardrailHoldChars,
  maxEventBytes: config.gatewaySseMaxLineBytes
}))

/** Screens a streamed answer as it passes (StreamScreen.ts); a decision that cannot be made ends it. */
export const screenedStream = (
  call: Call,
  response: Response,
  windows: Effect.Effect.Success<typeof streamBounds>,
  decide: (screened: Screened) => Promise<Exit.Exit<ReadonlyArray<Decided>, HttpError>>
): Response => {
  const source = response.body._tag === "Raw" ? response.body.body : undefined
  if (!(source instanceof Readable)) return response
  const { guardrails } = call.target
  const sink = new PassThrough()
  const decisions: Array<Decided> = []
  void screenStream(source, sink, {
    dialect: call.request.dialect,
    ...windows,
    screensText: guardrails.output !== "off",
    screensToolCalls: guardrails.tool_calls !== "off",
    decide: (screened) =>
      decide(screened).then((outcome) => {
        if (Exit.isSuccess(outcome)) decisions.push(...outcome.value)
        return verdictOf(call, outcome)
      }),
    finalEvent: () => guardrailEvent(decisions)
  })
  return HttpServerResponse.raw(sink, {
    status: response.status,
    headers: response.headers,
    contentType: response.body.contentType ?? "text/event-stream"
  })
}

/** The answer's reply and tool calls decided; the answer rewritten, refused, or passed with the decisions added. */
export const screenAnswer = (
  call: Call,
  response: Response,
  headers: Record<string, string>,
  decide: DecideEvents,
  answer: Answer<Response, HttpError>
) => {
  const die = (defect: unknown) => answer(Exit.die(defect))
  readBody(
    response,
    catching(die, (read) => {
      if (Exit.isFailure(read)) return answer(Exit.failCause(read.cause))
      const text = read.value.toString("utf8")
      let body: unknown
      try {
        body = JSON.parse(text)
      } catch {
        body = undefined
      }
      // A dialect's answer is a JSON object; anything else (or one nested past what is decided) cannot be screened.
      if (!isScreenableObject(body)) return answer(Exit.fail(unscreenable))
      const json = body
      const events = responseEvents(call.request.dialect, json)
      if (events.length > MAX_SCREENED_ITEMS) return answer(Exit.fail(tooManyItems))
      decide(
        events,
        catching(die, (decided) => {
          if (Exit.isFailure(decided)) return answer(Exit.failCause(decided.cause))
          const refusal = refusalOf(call.request, decided.value, headers)
          if (refusal !== undefined)
            return answer(Exit.succeed(HttpServerResponse.setHeaders(refusal, response.headers)))
          applyRewrites(decided.value)
          json["guardrail"] = guardrailSummary(decided.value)
          answer(
            Exit.succeed(HttpServerResponse.unsafeJson(json, { status: response.status, headers: response.headers }))
          )
        })
      )
    })
  )
}
