/**
 * The direct path of `POST /v1/events` (a fast-lane `DirectHandler`): a
 * runtime key's proposed event whose workspace settings and catalog snapshot
 * are warm in memory is decided with plain calls, no fiber, and answered once
 * the group commit has made its trace durable. Anything else (a cold cache, a
 * tool whose approval needs the grants table, any error to answer) is left
 * to the Effect path before anything is done. Both build the decision with
 * the same steps (Decisions.ts), so answers, receipts, traces and
 * `decisions` events are alike.
 */
import { Effect, Either, FiberRef, LogLevel, Runtime, Schema } from "effect"
import { CatalogSnapshot } from "../catalog/Snapshot.js"
import type { DirectAuthenticator } from "../identity/AuthenticationLive.js"
import { WorkspaceSettings } from "../identity/WorkspaceSettings.js"
import { recordDecisionNow } from "../operations/Metrics.js"
import { logDecisionDetails } from "../operations/Telemetry.js"
import { type DirectHandler, writeJson } from "../http/Lane.js"
import { OutboundGuard } from "../platform/OutboundGuard.js"
import { AppConfig } from "../platform/Config.js"
import { oversizedTarget } from "./ContentCap.js"
import { DecisionWriter } from "./DecisionWriter.js"
import { decisionOutcome, evaluate, intentIdOf, modesOf, needsGrant, unrecordedAnswer } from "./Decisions.js"
import { AuthorizationResponse, ProposedEvent } from "./Domain.js"
import { notifyEscalation } from "./Escalations.js"
import { ReceiptSigner } from "./Receipts.js"

const decodeEvent = Schema.decodeUnknownEither(ProposedEvent)
const encodeResponse = Schema.encodeEither(AuthorizationResponse)

/** Builds the handler over the Authorization service's parts; the HTTP side brings its authenticator. */
export const makeDirectDecisions = Effect.gen(function* () {
  const settings = yield* WorkspaceSettings
  const snapshots = yield* CatalogSnapshot
  const signer = yield* ReceiptSigner
  const writer = yield* DecisionWriter
  const outbound = yield* OutboundGuard
  const { maxMatchContentBytes } = yield* AppConfig
  const runFork = Runtime.runFork(yield* Effect.runtime<never>())
  // The per-decision debug line is built only when debug logs are kept at all.
  const debugLogs = LogLevel.lessThanEqual(yield* FiberRef.get(FiberRef.currentMinimumLogLevel), LogLevel.Debug)

  return (authenticate: DirectAuthenticator): DirectHandler =>
    (request, response, answered) => {
      const startedAt = performance.now()
      // Everything before the commit only looks: a miss leaves the request, untouched, to the Effect path.
      const caller = authenticate(request)
      if (caller === undefined) return false
      const decoded = decodeEvent(request.body)
      if (Either.isLeft(decoded)) return false
      const event = decoded.right
      const { principal } = event
      // Over the cap: the Effect path answers the 413.
      if (oversizedTarget(event.action, maxMatchContentBytes) !== null) return false
      if (principal.workspace_id !== caller.workspaceId) return false
      if (caller.environmentId !== null && caller.environmentId !== principal.environment_id) return false
      const config = settings.peekRuntimeConfig(caller.workspaceId)
      const environment = config?.environments.get(principal.environment_id)
      const snapshot = snapshots.peek(caller.workspaceId)
      if (config === undefined || environment === undefined || snapshot === undefined) return false
      const modes = modesOf(config, environment)
      if (needsGrant(snapshot, event, modes)) return false
      const intentId = intentIdOf(caller.workspaceId, event)
      const decision = evaluate(snapshot, event, modes, false, config.settings.default_action)
      const {
        response: answer,
        record,
        escalation
      } = decisionOutcome({
        caller,
        event,
        config,
        environment,
        intentId,
        decision,
        appliedGrant: null,
        startedAt,
        sign: signer.signNow
      })
      const encoded = encodeResponse(answer)
      if (Either.isLeft(encoded)) return false

      writer.enqueue(record, (recorded) => {
        if (response.destroyed) return // the client left; the decision stands recorded
        recordDecisionNow(recorded ? decision.effect : "defer")
        if (debugLogs) runFork(logDecisionDetails(config.settings, record.trace.id, decision))
        if (recorded && escalation !== null) runFork(notifyEscalation(outbound, escalation.url, escalation.notice))
        const closed = unrecordedAnswer(answer)
        const body = recorded ? encoded.right : Either.getOrElse(encodeResponse(closed), () => closed)
        writeJson(response, { status: 200, body }, request.requestId)
        answered(200)
      })
      return true
    }
})
