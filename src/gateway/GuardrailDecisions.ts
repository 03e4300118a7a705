/**
 * The pure parts of the gateway's guardrails (Guardrails.ts): when nothing
 * is to be decided, which decision speaks for several and what the client is
 * told (headers, refusal), the run/session headers, reading an answer whole.
 */
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Cause, Either, Exit, Option, Schema } from "effect"
import { finished, Readable } from "node:stream"
import type { DecisionAnswer } from "../authorization/Decisions.js"
import { profileFindsNothing } from "../authorization/checkers/Profile.js"
import { strictest } from "../authorization/Pipeline.js"
import type { AgentProfile } from "../catalog/Agents.js"
import type { Snapshot } from "../catalog/Snapshot.js"
import { BadGateway, BadRequest, errorBodyOf, errorHeadersOf, type HttpError, statusOf } from "../http/Errors.js"
import type { RuntimeConfig } from "../identity/WorkspaceSettings.js"
import type { Answer } from "../platform/Warm.js"
import { Identifier } from "../platform/Schemas.js"
import type { RouteTarget } from "./Connections.js"
import type { GuardrailMode } from "./Domain.js"
import type { Refusal, Screened } from "./GuardrailTexts.js"
import type { ProxyRequest } from "./Proxy.js"

/** A non-streamed answer is read whole to be decided; above this it is refused rather than passed unscreened. */
const MAX_SCREENED_ANSWER_BYTES = 16 * 1024 * 1024

export type Response = HttpServerResponse.HttpServerResponse

/** An event decided, with the mode it was decided in. */
export interface Decided {
  readonly screened: Screened
  readonly mode: GuardrailMode
  readonly answer: DecisionAnswer
}

export const allOff = (target: RouteTarget) =>
  target.guardrails.input === "off" && target.guardrails.output === "off" && target.guardrails.tool_calls === "off"

/** Nothing in the workspace could find anything or decide other than permit: deciding would only cost time. */
export const nothingCouldMatch = (config: RuntimeConfig, snapshot: Snapshot, agentId: string) =>
  config.settings.default_action === "permit" &&
  // A route's agent is registered (routes refuse unknown agents): its profile must have nothing to find.
  profileFindsNothing(snapshot.agents.get(agentId) as AgentProfile | undefined) &&
  snapshot.tools.size === 0 &&
  snapshot.labelPolicies.size === 0 &&
  !snapshot.policies.some((policy) => policy.ownerAgentId === null || policy.ownerAgentId === agentId)

/** Whether a provider's status carries an answer: the SDKs read any 2xx body (201, 203) as one; 204 and 205 have none. */
export const carriesAnswer = (status: number) => status >= 200 && status < 300 && status !== 204 && status !== 205

/** The headers of the request-side decision (`off`: the route decides no input; `none`: nothing was decided). */
export const decisionHeaders = (decided: Decided | "off" | "none"): Record<string, string> =>
  typeof decided === "string"
    ? { "x-guardrail-effect": decided }
    : {
        "x-guardrail-effect": decided.answer.effect,
        "x-guardrail-trace-id": decided.answer.trace_id,
        "x-guardrail-receipt-id": decided.answer.receipt_id
      }

/** The decisions made on an answer, as the `guardrail` object a client reads (body, or a stream's last event). */
export const guardrailSummary = (decided: ReadonlyArray<Decided>) => ({
  decisions: decided.map(({ answer, mode, screened }) => ({
    kind: screened.kind,
    operation: screened.operation,
    mode,
    effect: answer.effect,
    trace_id: answer.trace_id,
    receipt_id: answer.receipt_id
  }))
})

/**
 * A stream's last event, after everything the provider sent (chat: after `[DONE]`, which the
 * openai client stops at; messages: an event type the Anthropic client skips): `event: guardrail`.
 */
export const guardrailEvent = (decided: ReadonlyArray<Decided>) =>
  `event: guardrail\ndata: ${JSON.stringify({ guardrail: guardrailSummary(decided) })}\n\n`

/** An HTTP error as the conventions' answer with the request-side decision's headers (every gateway answer has them). */
export const errorWithHeaders = (error: HttpError, headers: Record<string, string>): Response =>
  HttpServerResponse.unsafeJson(errorBodyOf(error), {
    status: statusOf(error),
    headers: { ...errorHeadersOf(error), ...headers }
  })

/** Whether `response` already has every one of `headers` (the provider's answer built with them). */
const carries = (response: Response, headers: Record<string, string>) => {
  for (const name in headers) if (response.headers[name] !== headers[name]) return false
  return true
}

/** An outcome answered with the request-side decision's headers (an error too: every gateway answer has them). */
export const withHeaders =
  (answer: Answer<Response, HttpError>, headers: Record<string, string>): Answer<Response, HttpError> =>
  (exit) =>
    answer(
      Exit.isSuccess(exit)
        ? carries(exit.value, headers)
          ? exit
          : Exit.succeed(HttpServerResponse.setHeaders(exit.value, headers))
        : Option.match(Cause.failureOption(exit.cause), {
            onNone: () => exit,
            onSome: (error) => Exit.succeed(errorWithHeaders(error, headers))
          })
    )

/** The first enforced deny or defer among `decided` (strictest first), as what the client is told. */
export const refusalIn = (decided: ReadonlyArray<Decided>): Refusal | undefined => {
  const refusing = headline(
    decided.filter((one) => one.mode === "enforce" && (one.answer.effect === "deny" || one.answer.effect === "defer"))
  )
  if (refusing === undefined) return undefined
  const { answer, screened } = refusing
  return {
    effect: answer.effect === "deny" ? "deny" : "defer",
    reason: answer.reason,
    traceId: answer.trace_id,
    receiptId: answer.receipt_id,
    findings: answer.findings,
    approval: answer.approval,
    subject: screened.kind === "output.proposed" ? `the ${screened.operation} proposed` : `the ${screened.kind}`
  }
}

/** The decision that speaks for several: the strictest effect, the first of those. */
export const headline = (decided: ReadonlyArray<Decided>): Decided | undefined => {
  const effect = strictest(decided.map((one) => one.answer.effect))
  return decided.find((one) => one.answer.effect === effect)
}

const decodeIdentifier = Schema.decodeUnknownEither(Identifier)

/** An optional identifier header, bounded like the event contract's ids. */
export const scopeHeader = (headers: ProxyRequest["headers"], name: string) => {
  const value = headers[name]
  if (value === undefined) return Either.right(undefined)
  return Either.mapLeft(
    decodeIdentifier(value),
    () =>
      new BadRequest({
        code: "validation_failed",
        message: `${name}: expected an identifier of at most 200 characters.`,
        details: [{ path: name, message: "expected an identifier of at most 200 characters" }]
      })
  )
}

/** The decisions' run and session, from the `x-guardrail-run-id` and `x-guardrail-session-id` headers; or the 400. */
export const scopeOf = (headers: ProxyRequest["headers"]) =>
  Either.map(
    Either.all([scopeHeader(headers, "x-guardrail-run-id"), scopeHeader(headers, "x-guardrail-session-id")]),
    ([runId, sessionId]): { readonly run_id?: string; readonly session_id?: string } => ({
      ...(runId === undefined ? {} : { run_id: runId }),
      ...(sessionId === undefined ? {} : { session_id: sessionId })
    })
  )

/** The whole body of a proxied answer (a Node stream the proxy handed back), or why it could not be read. */
export const readBody = (response: Response, answer: Answer<Buffer, BadGateway>) => {
  const source = response.body._tag === "Raw" ? response.body.body : undefined
  const fail = (code: string, message: string) => answer(Exit.fail(new BadGateway({ code, message })))
  if (!(source instanceof Readable)) return fail("upstream_error", "The provider's answer is not readable.")
  const chunks: Array<Buffer> = []
  let size = 0
  let tooLarge = false
  source.on("data", (chunk: Buffer) => {
    size += chunk.length
    if (size <= MAX_SCREENED_ANSWER_BYTES) chunks.push(chunk)
    else if (!tooLarge) {
      tooLarge = true
      source.destroy()
    }
  })
  // `finished` also answers for a body that ended or broke off before this ran (its events already emitted).
  finished(source, (error) => {
    if (tooLarge)
      fail("answer_too_large_to_screen", "The provider's answer is larger than the guardrails screen (16 MiB).")
    else if (error !== undefined && error !== null) fail("upstream_error", "The provider's answer broke off.")
    else answer(Exit.succeed(Buffer.concat(chunks)))
  })
}
