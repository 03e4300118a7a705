/**
 * `POST /v1/events`: checks a proposed event against the workspace's
 * in-memory catalog snapshot and answers a decision, signed as a receipt,
 * with its trace committed (trace, receipt and `decisions` event in one
 * transaction, group-committed) before the answer. Anything that goes wrong
 * while deciding fails closed: effect `defer`, with a finding saying why,
 * never a 500.
 *
 * Deciding is written once, as warm steps (src/platform/Warm.ts) over the
 * cached workspace settings, catalog snapshot, the run's provenance
 * fingerprints (Provenance.ts) and (for a tool that asks for approval) the
 * grants table: from memory alone it is the fast lane's
 * direct path; otherwise the Effect path loads what a step needs and runs
 * the same step again.
 */
import { Cause, Effect, Exit, FiberRef, LogLevel, Option, Runtime, Schema } from "effect"
import type { Snapshot } from "../catalog/Snapshot.js"
import { CatalogSnapshot } from "../catalog/Snapshot.js"
import { type HttpError, NotFound } from "../http/Errors.js"
import type { Caller } from "../identity/Authentication.js"
import { type RuntimeConfig, WorkspaceSettings } from "../identity/WorkspaceSettings.js"
import { recordDecision, recordFailedClosed } from "../operations/Metrics.js"
import { logDecisionDetails } from "../operations/Telemetry.js"
import { AppConfig } from "../platform/Config.js"
import { OutboundGuard } from "../platform/OutboundGuard.js"
import {
  type Answer,
  hotUseCase,
  type Later,
  later,
  needs,
  ready,
  refused,
  settleValue,
  type WarmSteps
} from "../platform/Warm.js"
import { type PolicySet, policySetOf } from "../policysets/Digest.js"
import { type ApprovalState, AuthorizationRepo, type GrantRow, type NewFingerprint } from "./Repo.js"
import { contentTooLarge, oversizedTarget } from "./ContentCap.js"
import {
  capModes,
  type DecisionAnswer,
  decisionOutcome,
  evaluate,
  failClosed,
  failedClosedCause,
  intentIdOf,
  modesOf,
  needsGrant,
  asksPolicyApproval,
  type ProposedEventInput,
  unrecordedAnswer
} from "./Decisions.js"
import { makeDecisionAllowance } from "./DecisionAllowance.js"
import { DecisionWriter } from "./DecisionWriter.js"
import type { PolicyOverlay } from "./DryRun.js"
import { notifyEscalation } from "./Escalations.js"
import type { Decision, ParamSource } from "./Pipeline.js"
import { Provenance, readsProvenance, type ScopeFingerprints, scopeOf } from "./Provenance.js"
import { completedEvent, principalMismatch, type RequestedEvent } from "./Principals.js"
import { ReceiptSigner } from "./Receipts.js"
import { makeRunEnvironments, runMismatch } from "./RunEnvironments.js"

export { intentIdOf, type ProposedEventInput } from "./Decisions.js"

/** A proposed event to decide for a caller; `startedAt` (performance.now()) when its request arrived. */
export interface DecideRequest {
  readonly caller: Caller
  readonly event: RequestedEvent
  readonly startedAt: number
  /**
   * The caller's own mode for this decision (the gateway route's per direction): `observe` caps every
   * checker at observe (modes combine to the least strict), and the default action then does not apply.
   */
  readonly ceiling?: "observe" | "enforce" | undefined
  /** A dry run's view of the policy set (DryRun.ts); absent: the live set. */
  readonly overlay?: PolicyOverlay
}

/** A decision answered before its records are durable, and the answer that stands once they are. */
export interface EarlyDecision {
  readonly answer: DecisionAnswer
  readonly durable: Later<DecisionAnswer>
}

/** What deciding read beyond the caches: settings, a snapshot, an approval grant, or why the registry is unreadable. */
interface Loaded {
  readonly config?: RuntimeConfig
  readonly reloaded?: boolean
  readonly snapshot?: Snapshot
  readonly approval?: ApprovalState
  /** The fingerprints of the event's run or session (Provenance.ts). */
  readonly provenance?: ScopeFingerprints
  /** The environment of the event's run (null: no run has its id). */
  readonly runEnvironment?: string | null
  readonly unreadable?: string
}

type Need = "config" | "reload" | "snapshot" | "grant" | "provenance" | "run"

type Decided = ReturnType<typeof decisionOutcome> & {
  readonly decision: Decision
  readonly config: RuntimeConfig
  readonly policySet: PolicySet | null
}

const decodeClaims = Schema.decodeUnknownOption(
  Schema.parseJson(Schema.Struct({ policy_set_digest: Schema.optional(Schema.NullOr(Schema.String)) }))
)

/** The digest a receipt's JWS signed (its payload's claim); null for receipts issued before digests. */
const signedPolicySetDigest = (jws: string) =>
  Option.match(decodeClaims(Buffer.from(jws.split(".")[1] ?? "", "base64url").toString("utf8")), {
    onNone: () => null,
    onSome: (claims) => claims.policy_set_digest ?? null
  })

const unreadableRegistry = "The guardrail registry could not be read; the action is deferred."

export class Authorization extends Effect.Service<Authorization>()("authorization/Authorization", {
  effect: Effect.gen(function* () {
    const snapshots = yield* CatalogSnapshot
    const settings = yield* WorkspaceSettings
    const signer = yield* ReceiptSigner
    const writer = yield* DecisionWriter
    const outbound = yield* OutboundGuard
    const repo = yield* AuthorizationRepo
    const provenance = yield* Provenance
    const { decisionMatchMillis, decisionMillisPerSecond, decisionMillisPerSecondPerWorkspace, maxMatchContentBytes } =
      yield* AppConfig
    const runFork = Runtime.runFork(yield* Effect.runtime<never>())
    const withinAllowance = makeDecisionAllowance(
      {
        perWorkspace: decisionMillisPerSecondPerWorkspace,
        perService: decisionMillisPerSecond,
        matchMillis: decisionMatchMillis
      },
      (error) => runFork(Effect.logError("matching a decision failed; it was deferred", Cause.die(error)))
    )
    const runEnvironments = makeRunEnvironments()
    // The per-decision debug line is built only when debug logs are kept at all.
    const debugLogs = LogLevel.lessThanEqual(yield* FiberRef.get(FiberRef.currentMinimumLogLevel), LogLevel.Debug)

    /** The steps of a request, over its event with the principal completed from the credential (Principals.ts). */
    const steps = (request: DecideRequest) =>
      stepsOf(request, completedEvent(request.event, request.caller), principalMismatch(request.event, request.caller))

    const stepsOf = (
      { caller, startedAt, ceiling, overlay }: DecideRequest,
      event: ProposedEventInput,
      principalRefusal: HttpError | undefined
    ): WarmSteps<Loaded, Decided, HttpError, Need, never, never> => ({
      step: (loaded) => {
        const { principal } = event
        // A property of the body alone, like its schema: refused whole before anything else is looked up.
        const oversized = oversizedTarget(event.action, maxMatchContentBytes)
        if (oversized !== null) return refused(contentTooLarge(oversized, maxMatchContentBytes))
        if (principalRefusal !== undefined) return refused(principalRefusal)
        const config = loaded.config ?? settings.peekRuntimeConfig(caller.workspaceId)
        if (config === undefined) return needs("config")
        const environment = config.environments.get(principal.environment_id)
        if (environment === undefined) {
          // Maybe created (on another instance) since the cached copy was read: look once more before answering 404.
          if (loaded.reloaded !== true) return needs("reload")
          return refused(
            new NotFound({
              code: "environment_not_found",
              message: `Environment ${principal.environment_id} does not exist in this workspace.`
            })
          )
        }
        const runId = event.run_id
        if (runId !== undefined && loaded.unreadable === undefined) {
          // null (no such run) is an answer too: only undefined is read.
          const runEnvironment =
            loaded.runEnvironment !== undefined
              ? loaded.runEnvironment
              : runEnvironments.peek(caller.workspaceId, runId)
          if (runEnvironment === undefined) return needs("run")
          const mismatch = runMismatch(runId, runEnvironment, principal.environment_id)
          if (mismatch !== undefined) return refused(mismatch)
        }
        const modes = capModes(modesOf(config, environment), ceiling)
        let decision: Decision
        let grant = Option.none<GrantRow>()
        let denial: ApprovalState["denial"]
        let fingerprints: ReadonlyArray<NewFingerprint> = []
        let policySet: PolicySet | null = null
        if (loaded.unreadable !== undefined) {
          decision = failClosed(unreadableRegistry, { failure: loaded.unreadable })
        } else {
          const live = loaded.snapshot ?? snapshots.peek(caller.workspaceId)
          if (live === undefined) return needs("snapshot")
          const snapshot = overlay === undefined ? live : { ...live, policies: overlay(live.policies) }
          if (needsGrant(snapshot, event, modes) && loaded.approval === undefined) return needs("grant")
          if (loaded.approval !== undefined) {
            // A denial stands over any grant: the grant is neither applied nor reported.
            denial = loaded.approval.denial
            grant = denial === undefined ? loaded.approval.grant : Option.none()
          }
          // Provenance without labels: a proposed call reads its run's fingerprints; what comes in adds to them.
          let inferred: ReadonlyArray<ParamSource> = []
          const scope = scopeOf(event)
          if (scope !== undefined && readsProvenance(event, modes)) {
            const known = loaded.provenance ?? provenance.peek(caller.workspaceId, scope)
            if (known === undefined) return needs("provenance")
            inferred = provenance.infer(caller.workspaceId, known, event.action, snapshot.labelPolicies)
          } else if (scope !== undefined) {
            fingerprints = provenance.observed(caller.workspaceId, event, snapshot)
          }
          const defaultAction = ceiling === "observe" ? "permit" : config.settings.default_action
          decision = withinAllowance(caller.workspaceId, () =>
            evaluate(snapshot, event, modes, Option.isSome(grant), defaultAction, inferred, denial)
          )
          // An approval policy asked (only a match tells): decided again with the intent's grant or denial.
          if (loaded.approval === undefined && asksPolicyApproval(event, decision)) return needs("grant")
          // Memoised per snapshot (and agent, modes, default action): a map lookup on the hot path.
          policySet = policySetOf(snapshot, principal.agent_id, modes, defaultAction, overlay?.candidates)
        }
        const appliedGrant = Option.match(grant, {
          onNone: () => null,
          onSome: (row) => ({
            intent_id: row.intent_id,
            granted_by: row.granted_by,
            expires_at: row.expires_at.toISOString()
          })
        })
        const outcome = decisionOutcome({
          caller,
          event,
          config,
          environment,
          intentId: intentIdOf(caller.workspaceId, event),
          decision,
          appliedGrant,
          startedAt,
          sign: signer.signNow,
          policySet
        })
        const record = fingerprints.length === 0 ? outcome.record : { ...outcome.record, fingerprints }
        return ready({ ...outcome, record, decision, config, policySet })
      },
      load: (need, loaded) => {
        const workspaceId = caller.workspaceId
        switch (need) {
          case "config":
            return Effect.map(settings.runtimeConfig(workspaceId), (config) => ({ ...loaded, config }))
          case "reload":
            return Effect.map(settings.reloadRuntimeConfig(workspaceId), (config) => ({
              ...loaded,
              config,
              reloaded: true
            }))
          case "snapshot":
            return failClosedOnError(
              loaded,
              Effect.map(snapshots.get(workspaceId), (snapshot) => ({ ...loaded, snapshot }))
            )
          case "provenance":
            return failClosedOnError(
              loaded,
              Effect.map(provenance.load(workspaceId, scopeOf(event) ?? ""), (known) => ({
                ...loaded,
                provenance: known
              }))
            )
          case "run": {
            const runId = event.run_id ?? ""
            return failClosedOnError(
              loaded,
              Effect.map(repo.runEnvironment(workspaceId, runId), (found) => {
                runEnvironments.remember(workspaceId, runId, Option.getOrNull(found))
                return { ...loaded, runEnvironment: Option.getOrNull(found) }
              })
            )
          }
          case "grant":
            return failClosedOnError(
              loaded,
              Effect.map(repo.approvalState(workspaceId, intentIdOf(workspaceId, event)), (approval) => ({
                ...loaded,
                approval
              }))
            )
        }
      }
    })

    /** A registry that cannot be read decides the action `defer` (with why), never a 500. */
    const failClosedOnError = (loaded: Loaded, load: Effect.Effect<Loaded>) =>
      load.pipe(
        Effect.catchAllCause((cause) =>
          Effect.logError("authorization failed closed", cause).pipe(
            Effect.as({ ...loaded, unreadable: Cause.pretty(cause).split("\n")[0] ?? "unknown failure" })
          )
        )
      )

    /** After the decision's records were committed (or not): the bookkeeping, and the answer that stands. */
    const settled = (decided: Decided, committed: Exit.Exit<unknown, unknown>): DecisionAnswer => {
      const recorded = Exit.isSuccess(committed)
      const { decision, config, record, escalation, response, policySet } = decided
      // Stored with this decision (or an earlier one): the next decisions under the set carry only its digest.
      if (recorded && policySet !== null) policySet.stored = true
      const added = record.fingerprints?.[0]
      // Before the answer: this instance's next decision in the scope already reads what was added.
      if (recorded && added !== undefined) runFork(provenance.recorded(added.workspace_id, added.scope))
      recordDecision(recorded ? decision.effect : "defer")
      const failedClosed = recorded ? failedClosedCause(decision) : "unrecorded"
      if (failedClosed !== undefined) recordFailedClosed(failedClosed)
      if (debugLogs) runFork(logDecisionDetails(config.settings, record.trace.id, decision))
      if (recorded && escalation !== null) runFork(notifyEscalation(outbound, escalation.url, escalation.notice))
      return recorded ? response : unrecordedAnswer(response)
    }

    /** Commits the decision's records; answers it once they are durable (else defers: it cannot stand unrecorded). */
    const commit = (_: DecideRequest, decided: Decided, answer: Answer<DecisionAnswer, HttpError>) =>
      writer.enqueue(decided.record, (committed) => answer(Exit.succeed(settled(decided, committed))))

    const authorizeEvent = hotUseCase({ name: "Authorization.authorizeEvent", initial: {}, steps, act: commit })

    /**
     * The same decision, answered as soon as it is made, with `durable`: the answer that stands once its
     * records are committed (a `defer` if they could not be). For a caller that overlaps the commit with
     * other work (the gateway's provider call) and releases nothing before `durable` answers.
     */
    const commitLater = (_: DecideRequest, decided: Decided, answer: Answer<EarlyDecision, HttpError>) => {
      const durable = later<DecisionAnswer>()
      writer.enqueue(decided.record, (committed) => durable.done(settled(decided, committed)))
      answer(Exit.succeed({ answer: decided.response, durable }))
    }

    const authorizeEventEarly = hotUseCase({
      name: "Authorization.authorizeEventEarly",
      initial: {},
      steps,
      act: commitLater
    })

    /** Decides one proposed event in Effect code (the red-team runner's agent): the same use case. */
    const authorize = (caller: Caller, event: RequestedEvent) =>
      Effect.scoped(authorizeEvent.run({ caller, event, startedAt: performance.now() })).pipe(
        Effect.withSpan("Authorization.authorize")
      )

    /**
     * `POST /v1/events/evaluate`: the same steps as POST /v1/events over the overlaid policy set, answered
     * without committing anything (no trace, receipt, event, counter, fingerprint or escalation).
     */
    const evaluateDry = (caller: Caller, event: RequestedEvent, overlay: PolicyOverlay) =>
      settleValue(steps({ caller, event, startedAt: performance.now(), overlay }), {}).pipe(
        Effect.map((decided) => ({ ...decided.response, policy_set_digest: decided.policySetDigest })),
        Effect.withSpan("Authorization.evaluateDry")
      )

    const receipt = Effect.fn("Authorization.receipt")(function* (workspaceId: string, id: string) {
      const row = yield* repo.findReceipt(workspaceId, id)
      if (Option.isNone(row)) {
        return yield* new NotFound({ code: "receipt_not_found", message: `No receipt ${id} in this workspace.` })
      }
      return {
        receipt_id: id,
        trace_id: row.value.trace_id,
        jws: row.value.jws,
        created_at: row.value.created_at.toISOString(),
        policy_set_digest: signedPolicySetDigest(row.value.jws)
      }
    })

    return { authorizeEvent, authorizeEventEarly, authorize, evaluateDry, receipt, jwks: signer.jwks }
  }),
  dependencies: [
    ReceiptSigner.Default,
    DecisionWriter.Default,
    OutboundGuard.Default,
    AuthorizationRepo.Default,
    Provenance.Default
  ]
}) {}
