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
import { Cause, Effect, Either, Exit, Option, Runtime, type Scope } from "effect"
import { PassThrough, Readable } from "node:stream"
import { Authorization } from "../authorization/Authorization.js"
import type { DecisionAnswer } from "../authorization/Decisions.js"
import { CatalogSnapshot } from "../catalog/Snapshot.js"
import { type HttpError, NotFound } from "../http/Errors.js"
import { WorkspaceSettings } from "../identity/WorkspaceSettings.js"
import { AppConfig } from "../platform/Config.js"
import type { HotUseCase } from "../platform/Warm.js"
import { providerBody } from "./Calls.js"
import { Connections, type RouteTarget } from "./Connections.js"
import {
  refusalEvent,
  refusalResponse,
  requestEvents,
  responseEvents,
  type Screened,
  unscreenableEvent
} from "./GuardrailTexts.js"
import {
  allOff,
  type Decided,
  decisionHeaders,
  errorWithHeaders,
  guardrailEvent,
  guardrailSummary,
  headline,
  nothingCouldMatch,
  readBody,
  refusalIn,
  scopeHeader
} from "./GuardrailDecisions.js"
import { screenStream, type Verdict } from "./StreamScreen.js"
import { GatewayProxy, type ProxyRequest } from "./Proxy.js"

type Response = HttpServerResponse.HttpServerResponse

/** A decision answered before its records are durable. */
interface Pending extends Decided {
  readonly durable: Effect.Effect<DecisionAnswer>
}

/** The decisions as they stand once their records are durable (an unrecorded one as a defer). */
const durably = (pending: ReadonlyArray<Pending>): Effect.Effect<ReadonlyArray<Decided>> =>
  Effect.forEach(pending, ({ durable, mode, screened }) =>
    Effect.map(durable, (answer) => ({ screened, mode, answer }))
  )

/** Drops a provider's answer that will not be passed on (the proxy then records its usage as it ended). */
const discard = (response: Response) => {
  if (response.body._tag === "Raw" && response.body.body instanceof Readable) response.body.body.destroy()
}

export class GatewayGuard extends Effect.Service<GatewayGuard>()("gateway/GatewayGuard", {
  effect: Effect.gen(function* () {
    const proxy = yield* GatewayProxy
    const connections = yield* Connections
    const authorization = yield* Authorization
    const settings = yield* WorkspaceSettings
    const snapshots = yield* CatalogSnapshot
    const { gatewayGuardrailHoldChars: holdChars, gatewayGuardrailWindowChars: windowChars } = yield* AppConfig
    const runPromise = Runtime.runPromise(yield* Effect.runtime<never>())

    /**
     * Decides one event by the use case of `POST /v1/events`, answered before its records are durable
     * (`durable` answers once they are); in observe, a refusal of the event itself is only logged.
     */
    const decideEarly = (
      request: ProxyRequest,
      target: RouteTarget,
      environmentId: string,
      scope: { readonly run_id?: string | undefined; readonly session_id?: string | undefined },
      screened: Screened
    ): Effect.Effect<ReadonlyArray<Pending>, HttpError> => {
      const mode = target.guardrails[screened.direction]
      if (mode === "off") return Effect.succeed([])
      const decision = Effect.scoped(
        authorization.authorizeEventEarly.run({
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
      ).pipe(Effect.map(({ answer, durable }): ReadonlyArray<Pending> => [{ screened, mode, answer, durable }]))
      return mode === "enforce"
        ? decision
        : Effect.catchAll(decision, (error) =>
            Effect.as(Effect.logWarning("observed guardrail decision refused", error), [])
          )
    }

    /** Decides one event and answers once its records are durable (what stands). */
    const decide = (...args: Parameters<typeof decideEarly>) => Effect.flatMap(decideEarly(...args), durably)

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
              decisions.push(...decided)
              const refusal = refusalIn(decided)
              if (refusal !== undefined) return { _tag: "stop", event: refusalEvent(dialect, refusal) }
              const rewrite = decided.find((one) => one.mode === "enforce" && one.answer.effect === "rewrite")
              const text = rewrite?.answer.transformed_value
              return { _tag: "pass", rewritten: typeof text === "string" ? text : null }
            }),
            Effect.catchAll((error) =>
              Effect.succeed<Verdict>({ _tag: "stop", event: unscreenableEvent(dialect, error.code, error.message) })
            ),
            // Nothing unscreened goes out after a failure: the stream ends with an error event (fail closed).
            Effect.catchAllDefect((defect) =>
              Effect.as(Effect.logError("stream screening failed", defect), {
                _tag: "stop",
                event: unscreenableEvent(dialect, "guardrail_unavailable", "The answer could not be screened.")
              } satisfies Verdict)
            )
          )
        )
      const sink = new PassThrough()
      const decisions: Array<Decided> = []
      void screenStream(source, sink, {
        dialect,
        windowChars,
        holdChars,
        screensText: target.guardrails.output !== "off",
        screensToolCalls: target.guardrails.tool_calls !== "off",
        decide: verdict,
        finalEvent: () => guardrailEvent(decisions)
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
        json["guardrail"] = guardrailSummary(decided)
        return HttpServerResponse.unsafeJson(json, { status: response.status, headers: response.headers })
      })

    const screened = (request: ProxyRequest): Effect.Effect<Response, HttpError, Scope.Scope> => {
      // What the answer's x-guardrail-* headers say so far: an error answer carries them too.
      let headers = decisionHeaders("none")
      return Effect.gen(function* () {
        const { caller } = request
        const target = yield* connections.target(caller.workspaceId, request.routeId)
        if (allOff(target)) {
          headers = decisionHeaders("off")
          return HttpServerResponse.setHeaders(yield* proxy.forward.run(request), headers)
        }
        const config = yield* settings.runtimeConfig(caller.workspaceId)
        // A catalog that cannot be read is not "nothing to match": deciding then fails closed (defer).
        const snapshot = yield* Effect.option(Effect.catchAllDefect(snapshots.get(caller.workspaceId), Effect.fail))
        const parsed = providerBody(request.json)
        const quiet = Option.isSome(snapshot) && nothingCouldMatch(config, snapshot.value, target.agentId)
        if (quiet || Either.isLeft(parsed)) {
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
        const early = (yield* Effect.forEach(inputs, (one) => decideEarly(request, target, environmentId, scope, one), {
          concurrency: "unbounded"
        })).flat()
        const headersOf = (decided: ReadonlyArray<Decided>) => {
          const first = headline(decided)
          return decisionHeaders(target.guardrails.input === "off" ? "off" : first === undefined ? "none" : first)
        }
        headers = headersOf(early)
        // Refused: nothing goes upstream. Else the provider call overlaps the decisions' commit (which a
        // rewrite's text needs no more than a permit does); nothing is answered before they are durable.
        const refused = refusalIn(early) !== undefined
        const rewritten = !refused && applyRewrites(early)
        const forwarded = rewritten ? { ...request, json: body, text: JSON.stringify(body) } : request
        const [response, decided] = yield* Effect.all(
          [refused ? Effect.succeed(undefined) : proxy.forward.run(forwarded), durably(early)],
          { concurrency: 2 }
        )
        headers = headersOf(decided)
        const refusal = refusalOf(request, decided, headers)
        if (refusal !== undefined) {
          // Also a permit that could not be recorded (it stands as a defer): the provider's answer is dropped.
          if (response !== undefined) discard(response)
          return refusal
        }
        if (response === undefined) return yield* Effect.dieMessage("a refused request was not refused")
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
      }).pipe(
        Effect.catchAll((error) => Effect.succeed(errorWithHeaders(error, headers))),
        Effect.withSpan("GatewayGuard.forward")
      )
    }

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
          answer(
            Exit.isSuccess(exit)
              ? Exit.succeed(HttpServerResponse.setHeaders(exit.value, headers))
              : Option.match(Cause.failureOption(exit.cause), {
                  onNone: () => exit,
                  onSome: (error) => Exit.succeed(errorWithHeaders(error, headers))
                })
          )
        )
      },
      run: screened
    }

    return { forward }
  }),
  dependencies: [GatewayProxy.Default, Connections.Default]
}) {}
