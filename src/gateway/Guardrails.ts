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
 * workspace with nothing that could match (no policy for the agent, a
 * profile with nothing to find, no tool metadata or label policy, default action permit),
 * is the proxy alone.
 *
 * The call is one hot use case (src/platform/Warm.ts): its steps read the
 * route, the workspace's settings and its catalog from their caches (the
 * Effect path loads them when cold), and its act screens the call in
 * callbacks. The decisions and the proxy are hot use cases too, each run
 * directly when warm (`runNow`), so a warm screened call runs no fiber.
 */
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Cause, Effect, Either, Exit, Option, Runtime } from "effect"
import { Authorization, type EarlyDecision } from "../authorization/Authorization.js"
import type { DecisionAnswer } from "../authorization/Decisions.js"
import { CatalogSnapshot, type Snapshot } from "../catalog/Snapshot.js"
import { type HttpError, NotFound } from "../http/Errors.js"
import { type RuntimeConfig, WorkspaceSettings } from "../identity/WorkspaceSettings.js"
import {
  allNow,
  type Answer,
  answerNow,
  catching,
  type HotUseCase,
  hotUseCase,
  needs,
  ready,
  refused,
  runNow,
  type WarmSteps
} from "../platform/Warm.js"
import { providerBody } from "./Calls.js"
import { Connections, type RouteTarget } from "./Connections.js"
import {
  allOff,
  carriesAnswer,
  type Decided,
  decisionHeaders,
  errorWithHeaders,
  headline,
  nothingCouldMatch,
  refusalIn,
  scopeOf,
  withHeaders
} from "./GuardrailDecisions.js"
import {
  applyRewrites,
  type Call,
  discard,
  refusalOf,
  screenAnswer,
  screenedStream,
  streamBounds,
  tooManyInputs
} from "./GuardrailAnswers.js"
import { requestEvents, type Screened } from "./GuardrailTexts.js"
import { GatewayProxy, type ProxyRequest } from "./Proxy.js"

type Response = HttpServerResponse.HttpServerResponse

/** A decision answered before its records are durable. */
interface Pending extends Decided {
  readonly durable: EarlyDecision["durable"]
}

/** What screening a call reads from the caches: its route, and unless all off, the settings and the catalog. */
interface Loaded {
  readonly target?: RouteTarget
  readonly config?: RuntimeConfig
  /** None: the catalog could not be read, which is not "nothing to match" (deciding then fails closed). */
  readonly snapshot?: Option.Option<Snapshot>
}

type Need = "route" | "settings" | "catalog"

/** A call is the proxy alone (with these decision headers), or is screened (over its body as sent). */
type Plan =
  | { readonly _tag: "alone"; readonly headers: Record<string, string> }
  | {
      readonly _tag: "screen"
      readonly target: RouteTarget
      readonly config: RuntimeConfig
      readonly body: Record<string, unknown>
    }

const alone = (headers: Record<string, string>): Plan => ({ _tag: "alone", headers })

/** Nothing to decide (or no body to read, which the proxy refuses in its own words): the proxy alone. */
const planOf = (
  request: ProxyRequest,
  target: RouteTarget,
  config: RuntimeConfig,
  snapshot: Option.Option<Snapshot>
): Plan => {
  // Decided before the body is read: a route that nothing could match pays no body decoding.
  if (Option.isSome(snapshot) && nothingCouldMatch(config, snapshot.value, target.agentId)) {
    return alone(decisionHeaders("none"))
  }
  const parsed = providerBody(request.json)
  return Either.isLeft(parsed) ? alone(decisionHeaders("none")) : { _tag: "screen", target, config, body: parsed.right }
}

export class GatewayGuard extends Effect.Service<GatewayGuard>()("gateway/GatewayGuard", {
  effect: Effect.gen(function* () {
    const proxy = yield* GatewayProxy
    const connections = yield* Connections
    const authorization = yield* Authorization
    const settings = yield* WorkspaceSettings
    const snapshots = yield* CatalogSnapshot
    const bounds = yield* streamBounds
    const runtime = yield* Effect.runtime<never>()
    const runFork = Runtime.runFork(runtime)

    /**
     * Decides one event by the use case of `POST /v1/events`, answered before its records are durable
     * (`durable` answers once they are); in observe, a refusal of the event itself is only logged.
     */
    const decideEarly = (call: Call, screened: Screened, answer: Answer<ReadonlyArray<Pending>, HttpError>) => {
      const { request, target } = call
      const mode = target.guardrails[screened.direction]
      if (mode === "off") return answer(Exit.succeed([]))
      const input = {
        caller: request.caller,
        startedAt: performance.now(),
        ceiling: mode,
        event: {
          kind: screened.kind,
          principal: {
            agent_id: target.agentId,
            environment_id: call.environmentId,
            workspace_id: request.caller.workspaceId
          },
          action: { operation: screened.operation, content: screened.content, params: screened.params },
          ...call.scope,
          metadata: {
            source: "gateway",
            route_id: target.routeId,
            request_id: request.requestId,
            dialect: request.dialect === "chat" ? "chat_style" : "messages_style"
          }
        }
      }
      answerNow(
        authorization.authorizeEventEarly,
        input,
        (exit) => {
          if (Exit.isSuccess(exit)) {
            return answer(Exit.succeed([{ screened, mode, answer: exit.value.answer, durable: exit.value.durable }]))
          }
          const refusal = Cause.failureOption(exit.cause)
          if (mode === "enforce" || Option.isNone(refusal)) return answer(Exit.failCause(exit.cause))
          runFork(Effect.logWarning("observed guardrail decision refused", refusal.value))
          answer(Exit.succeed([]))
        },
        runFork
      )
    }

    /** The decisions as they stand once their records are durable (an unrecorded one as a defer). */
    const durably = (pending: ReadonlyArray<Pending>, then: (decided: ReadonlyArray<Decided>) => void) =>
      allNow<Pending, Decided, never>(
        pending,
        ({ durable, mode, screened }, answer) =>
          durable.then((stands: DecisionAnswer) => answer(Exit.succeed({ screened, mode, answer: stands }))),
        (exit) => {
          if (Exit.isSuccess(exit)) then(exit.value)
        }
      )

    /** Decides each event and answers once their records are durable (what stands). */
    const decide = (call: Call, events: ReadonlyArray<Screened>, answer: Answer<ReadonlyArray<Decided>, HttpError>) =>
      allNow(
        events,
        (screened, one: Answer<ReadonlyArray<Pending>, HttpError>) => decideEarly(call, screened, one),
        (exit) =>
          Exit.isSuccess(exit)
            ? durably(exit.value.flat(), (decided) => answer(Exit.succeed(decided)))
            : answer(Exit.failCause(exit.cause))
      )

    /** One window of a streamed answer decided, for StreamScreen's promise; a defect is logged and answered. */
    const decideWindow = (call: Call, screened: Screened) =>
      new Promise<Exit.Exit<ReadonlyArray<Decided>, HttpError>>((resolve) => {
        const settle = (outcome: Exit.Exit<ReadonlyArray<Decided>, HttpError>) => {
          if (Exit.isFailure(outcome) && Option.isNone(Cause.failureOption(outcome.cause))) {
            runFork(Effect.logError("stream screening failed", outcome.cause))
          }
          resolve(outcome)
        }
        const die = (defect: unknown) => settle(Exit.die(defect))
        try {
          decide(call, [screened], catching(die, settle))
        } catch (defect) {
          die(defect)
        }
      })

    const steps = (request: ProxyRequest): WarmSteps<Loaded, Plan, HttpError, Need, HttpError, never> => ({
      step: (loaded) => {
        const workspaceId = request.caller.workspaceId
        const target = loaded.target ?? connections.peekTarget(workspaceId, request.routeId)
        if (target === undefined) return needs("route")
        // The run and session headers are checked on every call, decided or not (400 for a bad one).
        const scope = scopeOf(request.headers)
        if (Either.isLeft(scope)) return refused(scope.left)
        if (allOff(target)) return ready(alone(decisionHeaders("off")))
        const config = loaded.config ?? settings.peekRuntimeConfig(workspaceId)
        if (config === undefined) return needs("settings")
        const snapshot = loaded.snapshot ?? Option.fromNullable(snapshots.peek(workspaceId))
        if (loaded.snapshot === undefined && Option.isNone(snapshot)) return needs("catalog")
        return ready(planOf(request, target, config, snapshot))
      },
      load: (need, loaded) => {
        const workspaceId = request.caller.workspaceId
        switch (need) {
          case "route":
            return Effect.map(connections.target(workspaceId, request.routeId), (target) => ({ ...loaded, target }))
          case "settings":
            return Effect.map(settings.runtimeConfig(workspaceId), (config) => ({ ...loaded, config }))
          case "catalog":
            return Effect.map(
              Effect.option(Effect.catchAllDefect(snapshots.get(workspaceId), Effect.fail)),
              (snapshot) => ({ ...loaded, snapshot })
            )
        }
      }
    })

    /** Screens one call whose caches are warm: input decisions, the provider call, output decisions. */
    const act = (request: ProxyRequest, plan: Plan, answerOnce: Answer<Response, HttpError>): (() => void) => {
      let answered = false
      const answer: Answer<Response, HttpError> = (exit) => {
        if (answered) return
        answered = true
        answerOnce(exit)
      }
      // The proxy's run, once started; `closed` before it starts means the client left: nothing goes upstream.
      let proxyClosed: (() => void) | undefined
      let gone = false
      const forward = (forwarded: ProxyRequest, then: Answer<Response, HttpError>) => {
        if (!gone) proxyClosed = runNow(proxy.forward, forwarded, then, runFork)
      }
      const closed = () => {
        gone = true
        proxyClosed?.()
      }
      if (plan._tag === "alone") {
        forward({ ...request, answerHeaders: plan.headers }, withHeaders(answer, plan.headers))
        return closed
      }
      const { target, config } = plan
      // What the answer's x-guardrail-* headers say so far: an error answer carries them too.
      let headers = decisionHeaders("none")
      const fail = (error: HttpError) => answer(Exit.succeed(errorWithHeaders(error, headers)))
      // A runtime key bound to an environment decides there; anyone else in the workspace's default one.
      const environmentId =
        request.caller.environmentId ?? [...config.environments].find(([, environment]) => environment.isDefault)?.[0]
      if (environmentId === undefined) {
        fail(
          new NotFound({
            code: "environment_not_found",
            message: "The workspace has no default environment to decide the gateway's guardrails in."
          })
        )
        return closed
      }
      // Valid: the steps refused the call otherwise.
      const call: Call = {
        request,
        target,
        environmentId,
        scope: Either.getOrElse(scopeOf(request.headers), () => ({}))
      }
      // A copy: a rewrite changes the body that goes upstream, never the request as received.
      const body = structuredClone(plan.body)
      const inputs = target.guardrails.input === "off" ? [] : requestEvents(request.dialect, body)
      const tooMany = tooManyInputs(inputs.length)
      if (tooMany !== undefined) {
        fail(tooMany)
        return closed
      }
      const headersOf = (decided: ReadonlyArray<Decided>) => {
        const first = headline(decided)
        return decisionHeaders(target.guardrails.input === "off" ? "off" : first === undefined ? "none" : first)
      }
      const guarded = <A>(run: (value: A) => void) => catching((defect) => answer(Exit.die(defect)), run)

      /** Once the provider answered (or not: refused) and the request's decisions are durable. */
      const proceed = (response: Exit.Exit<Response, HttpError> | undefined, decided: ReadonlyArray<Decided>) => {
        headers = headersOf(decided)
        const refusal = refusalOf(request, decided, headers)
        if (refusal !== undefined) {
          // Also a permit that could not be recorded (it stands as a defer): the provider's answer is dropped.
          if (response !== undefined && Exit.isSuccess(response)) discard(response.value)
          return answer(Exit.succeed(refusal))
        }
        if (response === undefined) return answer(Exit.die(new Error("a refused request was not refused")))
        if (Exit.isFailure(response)) return withHeaders(answer, headers)(response)
        const screensAnswer = target.guardrails.output !== "off" || target.guardrails.tool_calls !== "off"
        const provided = response.value
        const contentType = (provided.headers["content-type"] ?? provided.body.contentType ?? "").toLowerCase()
        const answerWithHeaders = withHeaders(answer, headers)
        const answered = screensAnswer && carriesAnswer(provided.status)
        if (answered && contentType.includes("event-stream")) {
          return answerWithHeaders(
            Exit.succeed(screenedStream(call, provided, bounds, (one) => decideWindow(call, one)))
          )
        }
        // Whatever else a 2xx is (JSON, or not, whatever it says it is), it is screened or refused: never passed unseen.
        if (!answered) return answerWithHeaders(response)
        screenAnswer(call, provided, headers, (events, then) => decide(call, events, then), answerWithHeaders)
      }

      allNow(
        inputs,
        (one, then: Answer<ReadonlyArray<Pending>, HttpError>) => decideEarly(call, one, then),
        guarded((exit: Exit.Exit<Array<ReadonlyArray<Pending>>, HttpError>) => {
          if (Exit.isFailure(exit)) return withHeaders(answer, headers)(Exit.failCause(exit.cause))
          const early = exit.value.flat()
          headers = headersOf(early)
          // Refused: nothing goes upstream. Else the provider call overlaps the decisions' commit (which a
          // rewrite's text needs no more than a permit does); nothing is answered before they are durable.
          const refused = refusalIn(early) !== undefined
          const rewritten = !refused && applyRewrites(early)
          const forwarded = rewritten
            ? { ...request, json: body, text: JSON.stringify(body), answerHeaders: headers }
            : { ...request, answerHeaders: headers }
          let response: Exit.Exit<Response, HttpError> | undefined
          let decided: ReadonlyArray<Decided> | undefined
          const both = guarded(() => {
            if ((response !== undefined || refused) && decided !== undefined) proceed(response, decided)
          })
          if (!refused)
            forward(forwarded, (exit) => {
              response = exit
              both(undefined)
            })
          durably(early, (stands) => {
            decided = stands
            both(undefined)
          })
        })
      )
      return closed
    }

    const useCase = hotUseCase({ name: "GatewayGuard.forward", initial: {}, steps, act })

    /**
     * The proxy with its guardrails. Directly when the caches are warm: the proxy alone by its own direct run
     * (which declines when a step of its own needs loading), a screened call by `act`. An error answer of the
     * Effect path (an unknown route) carries the headers too.
     */
    const forward: HotUseCase<ProxyRequest, Response, HttpError> = {
      direct: (request, answer) => {
        const warm = steps(request).step({})
        if (warm._tag !== "Ready") return { taken: false }
        const plan = warm.value
        return plan._tag === "alone"
          ? proxy.forward.direct({ ...request, answerHeaders: plan.headers }, withHeaders(answer, plan.headers))
          : { taken: true, closed: act(request, plan, answer) }
      },
      run: (request) =>
        Effect.catchAll(useCase.run(request), (error) =>
          Effect.succeed(errorWithHeaders(error, decisionHeaders("none")))
        )
    }

    return { forward }
  }),
  dependencies: [GatewayProxy.Default, Connections.Default]
}) {}
