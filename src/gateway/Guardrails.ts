/**
 * The gateway's guardrails: each proxied call is decided by the same use
 * case as `POST /v1/events` (`Authorization.authorizeEvent`: same checkers,
 * trace and receipt committed by the DecisionWriter), around the proxy.
 *
 * - Request: the latest user message (`input.received`) and the tool results
 *   after the last assistant turn (`tool.result`), before anything goes
 *   upstream. `deny`/`defer` answers 403 in the dialect's error shape and the
 *   provider is not called; `rewrite` sends the transformed text instead.
 * - Answer (non-streamed JSON): the reply text and every tool call as
 *   `output.proposed`; `rewrite` replaces the text, `deny`/`defer` replaces the
 *   answer with the 403 (the call's usage is still recorded: it was paid for).
 *   The output decisions go in a `guardrail` object added to the body.
 * - Streams: the request side likewise; the streamed answer's text in
 *   windows and its tool calls once assembled (StreamScreen.ts); a refusal
 *   ends the stream with the dialect's error event.
 *
 * Per route and direction (`input`, `output`, `tool_calls`): `off` decides
 * nothing, `observe` decides with every checker capped at observe and never
 * changes the traffic, `enforce` acts. A route with everything off, or a
 * workspace with nothing that could match (no policy for the agent, no
 * agent profile, no tool metadata or label policy, default action permit),
 * takes the proxy's direct path with no extra work.
 */
import { HttpServerResponse } from "@effect/platform"
import { Effect, Either, Exit, Runtime, Schema, type Scope } from "effect"
import { PassThrough, Readable } from "node:stream"
import { Authorization } from "../authorization/Authorization.js"
import type { DecisionAnswer } from "../authorization/Decisions.js"
import { strictest } from "../authorization/Pipeline.js"
import { CatalogSnapshot, type Snapshot } from "../catalog/Snapshot.js"
import { BadGateway, BadRequest, type HttpError, NotFound } from "../http/Errors.js"
import { type RuntimeConfig, WorkspaceSettings } from "../identity/WorkspaceSettings.js"
import { AppConfig } from "../platform/Config.js"
import { Identifier } from "../platform/Schemas.js"
import type { HotUseCase } from "../platform/Warm.js"
import { providerBody } from "./Calls.js"
import { Connections, type RouteTarget } from "./Connections.js"
import type { GuardrailMode } from "./Domain.js"
import {
  type Refusal,
  refusalEvent,
  refusalResponse,
  requestEvents,
  responseEvents,
  type Screened,
  unscreenableEvent
} from "./GuardrailTexts.js"
import { screenStream, type Verdict } from "./StreamScreen.js"
import { GatewayProxy, type ProxyRequest } from "./Proxy.js"

/** A non-streamed answer is read whole to be decided; above this it is refused rather than passed unscreened. */
const MAX_SCREENED_ANSWER_BYTES = 16 * 1024 * 1024

type Response = HttpServerResponse.HttpServerResponse

/** An event decided, with the mode it was decided in. */
interface Decided {
  readonly screened: Screened
  readonly mode: GuardrailMode
  readonly answer: DecisionAnswer
}

const allOff = (target: RouteTarget) =>
  target.guardrails.input === "off" && target.guardrails.output === "off" && target.guardrails.tool_calls === "off"

/** Nothing in the workspace could find anything or decide other than permit: deciding would only cost time. */
const nothingCouldMatch = (config: RuntimeConfig, snapshot: Snapshot, agentId: string) =>
  config.settings.default_action === "permit" &&
  !snapshot.agents.has(agentId) &&
  snapshot.tools.size === 0 &&
  snapshot.labelPolicies.size === 0 &&
  !snapshot.policies.some((policy) => policy.ownerAgentId === null || policy.ownerAgentId === agentId)

/** The headers of the request-side decision (`off`: the route decides no input; `none`: nothing was decided). */
const decisionHeaders = (decided: Decided | "off" | "none"): Record<string, string> =>
  typeof decided === "string"
    ? { "x-guardrail-effect": decided }
    : {
        "x-guardrail-effect": decided.answer.effect,
        "x-guardrail-trace-id": decided.answer.trace_id,
        "x-guardrail-receipt-id": decided.answer.receipt_id
      }

/** The first enforced deny or defer among `decided` (strictest first), as what the client is told. */
const refusalIn = (decided: ReadonlyArray<Decided>): Refusal | undefined => {
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
const headline = (decided: ReadonlyArray<Decided>): Decided | undefined => {
  const effect = strictest(decided.map((one) => one.answer.effect))
  return decided.find((one) => one.answer.effect === effect)
}

const decodeIdentifier = Schema.decodeUnknownEither(Identifier)

/** An optional identifier header, bounded like the event contract's ids. */
const scopeHeader = (headers: ProxyRequest["headers"], name: string) => {
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

/** The whole body of a proxied answer (a Node stream the proxy handed back), or why it could not be read. */
const readBody = (response: Response) =>
  Effect.async<Buffer, BadGateway>((resume) => {
    const source = response.body._tag === "Raw" ? response.body.body : undefined
    if (!(source instanceof Readable)) {
      resume(Effect.fail(new BadGateway({ code: "upstream_error", message: "The provider's answer is not readable." })))
      return
    }
    const chunks: Array<Buffer> = []
    let size = 0
    const fail = (code: string, message: string) => resume(Effect.fail(new BadGateway({ code, message })))
    source.on("data", (chunk: Buffer) => {
      size += chunk.length
      if (size <= MAX_SCREENED_ANSWER_BYTES) chunks.push(chunk)
      else {
        source.destroy()
        fail("answer_too_large_to_screen", "The provider's answer is larger than the guardrails screen (16 MiB).")
      }
    })
    source.once("end", () => resume(Effect.succeed(Buffer.concat(chunks))))
    source.once("error", () => fail("upstream_error", "The provider's answer broke off."))
  })

export class GatewayGuard extends Effect.Service<GatewayGuard>()("gateway/GatewayGuard", {
  effect: Effect.gen(function* () {
    const proxy = yield* GatewayProxy
    const connections = yield* Connections
    const authorization = yield* Authorization
    const settings = yield* WorkspaceSettings
    const snapshots = yield* CatalogSnapshot
    const { gatewayGuardrailHoldChars: holdChars, gatewayGuardrailWindowChars: windowChars } = yield* AppConfig
    const runPromise = Runtime.runPromise(yield* Effect.runtime<never>())

    /** Decides one event by the use case of `POST /v1/events`; in observe, a refusal of the event itself is only logged. */
    const decide = (
      request: ProxyRequest,
      target: RouteTarget,
      environmentId: string,
      scope: { readonly run_id?: string | undefined; readonly session_id?: string | undefined },
      screened: Screened
    ): Effect.Effect<ReadonlyArray<Decided>, HttpError> => {
      const mode = target.guardrails[screened.direction]
      if (mode === "off") return Effect.succeed([])
      const decision = Effect.scoped(
        authorization.authorizeEvent.run({
          caller: request.caller,
          startedAt: performance.now(),
          ceiling: mode,
          event: {
            kind: screened.kind,
            principal: {
              agent_id: target.agentId,
              environment_id: environmentId,
              workspace_id: request.caller.workspaceId
            },
            action: { operation: screened.operation, content: screened.content, params: screened.params },
            ...scope,
            metadata: {
              source: "gateway",
              route_id: target.routeId,
              request_id: request.requestId,
              dialect: request.dialect === "chat" ? "chat_style" : "messages_style"
            }
          }
        })
      ).pipe(Effect.map((answer): ReadonlyArray<Decided> => [{ screened, mode, answer }]))
      return mode === "enforce"
        ? decision
        : Effect.catchAll(decision, (error) =>
            Effect.as(Effect.logWarning("observed guardrail decision refused", error), [])
          )
    }

    /** The first enforced refusal among `decided`, as the dialect's 403. */
    const refusalOf = (
      request: ProxyRequest,
      decided: ReadonlyArray<Decided>,
      headers: Record<string, string>
    ): Response | undefined => {
      const refusal = refusalIn(decided)
      return refusal === undefined ? undefined : refusalResponse(request.dialect, refusal, headers)
    }

    /** Screens a streamed answer as it passes (StreamScreen.ts); a decision that cannot be made ends it. */
    const screenedStream = (
      request: ProxyRequest,
      target: RouteTarget,
      environmentId: string,
      scope: { readonly run_id?: string | undefined; readonly session_id?: string | undefined },
      response: Response
    ): Response => {
      const source = response.body._tag === "Raw" ? response.body.body : undefined
      if (!(source instanceof Readable)) return response
      const { dialect } = request
      const verdict = (screened: Screened) =>
        runPromise(
          decide(request, target, environmentId, scope, screened).pipe(
            Effect.map((decided): Verdict => {
              const refusal = refusalIn(decided)
              if (refusal !== undefined) return { _tag: "stop", event: refusalEvent(dialect, refusal) }
              const rewrite = decided.find((one) => one.mode === "enforce" && one.answer.effect === "rewrite")
              const text = rewrite?.answer.transformed_value
              return { _tag: "pass", rewritten: typeof text === "string" ? text : null }
            }),
            Effect.catchAll((error) =>
              Effect.succeed<Verdict>({ _tag: "stop", event: unscreenableEvent(dialect, error.code, error.message) })
            )
          )
        )
      const sink = new PassThrough()
      void screenStream(source, sink, {
        dialect,
        windowChars,
        holdChars,
        screensText: target.guardrails.output !== "off",
        screensToolCalls: target.guardrails.tool_calls !== "off",
        decide: verdict
      })
      return HttpServerResponse.raw(sink, {
        status: response.status,
        headers: response.headers,
        contentType: response.body.contentType ?? "text/event-stream"
      })
    }

    /** Puts each enforced rewrite's text in place; answers whether anything changed. */
    const applyRewrites = (decided: ReadonlyArray<Decided>) => {
      let changed = false
      for (const { answer, mode, screened } of decided) {
        if (mode !== "enforce" || answer.effect !== "rewrite" || typeof answer.transformed_value !== "string") continue
        screened.replace?.(answer.transformed_value)
        changed = true
      }
      return changed
    }

    /** The answer's reply and tool calls decided; the answer rewritten, refused, or passed with the decisions added. */
    const screenAnswer = (
      request: ProxyRequest,
      target: RouteTarget,
      environmentId: string,
      scope: { readonly run_id?: string | undefined; readonly session_id?: string | undefined },
      response: Response,
      headers: Record<string, string>
    ) =>
      Effect.gen(function* () {
        const text = (yield* readBody(response)).toString("utf8")
        let body: unknown
        try {
          body = JSON.parse(text)
        } catch {
          body = undefined
        }
        if (typeof body !== "object" || body === null || Array.isArray(body)) {
          // Not a JSON answer: nothing of it is a reply or a tool call to decide.
          return HttpServerResponse.text(text, { status: response.status, headers: response.headers })
        }
        const json = body as Record<string, unknown>
        const events = responseEvents(request.dialect, json)
        const decided = (yield* Effect.forEach(
          events,
          (screened) => decide(request, target, environmentId, scope, screened),
          { concurrency: "unbounded" }
        )).flat()
        const refusal = refusalOf(request, decided, headers)
        if (refusal !== undefined) return HttpServerResponse.setHeaders(refusal, response.headers)
        applyRewrites(decided)
        json["guardrail"] = {
          decisions: decided.map(({ answer, mode, screened }) => ({
            kind: screened.kind,
            operation: screened.operation,
            mode,
            effect: answer.effect,
            trace_id: answer.trace_id,
            receipt_id: answer.receipt_id
          }))
        }
        return HttpServerResponse.unsafeJson(json, { status: response.status, headers: response.headers })
      })

    const screened = (request: ProxyRequest): Effect.Effect<Response, HttpError, Scope.Scope> =>
      Effect.gen(function* () {
        const { caller } = request
        const target = yield* connections.target(caller.workspaceId, request.routeId)
        if (allOff(target)) {
          return HttpServerResponse.setHeaders(yield* proxy.forward.run(request), decisionHeaders("off"))
        }
        const config = yield* settings.runtimeConfig(caller.workspaceId)
        const snapshot = yield* snapshots.get(caller.workspaceId)
        const parsed = providerBody(request.json)
        if (nothingCouldMatch(config, snapshot, target.agentId) || Either.isLeft(parsed)) {
          // Nothing to decide (or no body to read, which the proxy refuses in its own words).
          return HttpServerResponse.setHeaders(yield* proxy.forward.run(request), decisionHeaders("none"))
        }
        // A runtime key bound to an environment decides there; anyone else in the workspace's default one.
        const environmentId =
          caller.environmentId ?? [...config.environments].find(([, environment]) => environment.isDefault)?.[0]
        if (environmentId === undefined) {
          return yield* new NotFound({
            code: "environment_not_found",
            message: "The workspace has no default environment to decide the gateway's guardrails in."
          })
        }
        const runId = yield* scopeHeader(request.headers, "x-guardrail-run-id")
        const sessionId = yield* scopeHeader(request.headers, "x-guardrail-session-id")
        const scope = {
          ...(runId === undefined ? {} : { run_id: runId }),
          ...(sessionId === undefined ? {} : { session_id: sessionId })
        }
        // A copy: a rewrite changes the body that goes upstream, never the request as received.
        const body = structuredClone(parsed.right)
        const inputs = target.guardrails.input === "off" ? [] : requestEvents(request.dialect, body)
        const decided = (yield* Effect.forEach(
          inputs,
          (one) => decide(request, target, environmentId, scope, one),
          { concurrency: "unbounded" }
        )).flat()
        const first = headline(decided)
        const headers = decisionHeaders(
          target.guardrails.input === "off" ? "off" : first === undefined ? "none" : first
        )
        const refusal = refusalOf(request, decided, headers)
        if (refusal !== undefined) return refusal
        const rewritten = applyRewrites(decided)
        const forwarded = rewritten ? { ...request, json: body, text: JSON.stringify(body) } : request
        const response = yield* proxy.forward.run(forwarded)
        const screensAnswer = target.guardrails.output !== "off" || target.guardrails.tool_calls !== "off"
        const contentType = response.headers["content-type"] ?? response.body.contentType ?? ""
        if (screensAnswer && response.status === 200 && contentType.includes("event-stream")) {
          return HttpServerResponse.setHeaders(screenedStream(request, target, environmentId, scope, response), headers)
        }
        if (!screensAnswer || body["stream"] === true || response.status !== 200 || !contentType.includes("json")) {
          return HttpServerResponse.setHeaders(response, headers)
        }
        return HttpServerResponse.setHeaders(
          yield* screenAnswer(request, target, environmentId, scope, response, headers),
          headers
        )
      }).pipe(Effect.withSpan("GatewayGuard.forward"))

    /**
     * The proxy with its guardrails. The direct path is the proxy's own when nothing is to be decided
     * (route all off, or nothing that could match, known from the caches); anything to decide takes the
     * Effect path, which loads what it needs.
     */
    const forward: HotUseCase<ProxyRequest, Response, HttpError> = {
      direct: (request, answer) => {
        const workspaceId = request.caller.workspaceId
        const target = connections.peekTarget(workspaceId, request.routeId)
        if (target === undefined) return { taken: false }
        let headers: Record<string, string>
        if (allOff(target)) headers = decisionHeaders("off")
        else {
          const config = settings.peekRuntimeConfig(workspaceId)
          const snapshot = snapshots.peek(workspaceId)
          if (config === undefined || snapshot === undefined || !nothingCouldMatch(config, snapshot, target.agentId)) {
            return { taken: false }
          }
          headers = decisionHeaders("none")
        }
        return proxy.forward.direct(request, (exit) =>
          answer(Exit.map(exit, (response) => HttpServerResponse.setHeaders(response, headers)))
        )
      },
      run: screened
    }

    return { forward }
  }),
  dependencies: [GatewayProxy.Default, Connections.Default]
}) {}
