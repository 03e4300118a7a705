/**
 * `POST /v1/events`: checks a proposed event against the workspace's
 * in-memory catalog snapshot and answers a decision, signed as a receipt,
 * with its trace committed (trace, receipt and `decisions` event in one
 * transaction) before the answer. Anything that goes wrong while deciding
 * fails closed: effect `defer`, with a finding saying why, never a 500.
 */
import { AppConfig } from "../platform/Config.js"
import { contentTooLarge, oversizedTarget } from "./ContentCap.js"
import { SqlClient } from "@effect/sql"
import { Cause, Effect, Option } from "effect"
import { CatalogSnapshot } from "../catalog/Snapshot.js"
import type { Caller } from "../identity/Authentication.js"
import { WorkspaceSettings } from "../identity/WorkspaceSettings.js"
import { recordDecision } from "../operations/Metrics.js"
import { logDecisionDetails } from "../operations/Telemetry.js"
import { Forbidden, NotFound } from "../http/Errors.js"
import { OutboundGuard } from "../platform/OutboundGuard.js"
import { makeDirectDecisions } from "./DecideDirect.js"
import { DecisionWriter } from "./DecisionWriter.js"
import {
  decisionOutcome,
  evaluate,
  failClosed,
  intentIdOf,
  modesOf,
  needsGrant,
  type ProposedEventInput,
  unrecordedAnswer
} from "./Decisions.js"
import { notifyEscalation } from "./Escalations.js"
import { ReceiptSigner } from "./Receipts.js"

export { intentIdOf, type ProposedEventInput } from "./Decisions.js"

export class Authorization extends Effect.Service<Authorization>()("authorization/Authorization", {
  effect: Effect.gen(function* () {
    const snapshots = yield* CatalogSnapshot
    const settings = yield* WorkspaceSettings
    const signer = yield* ReceiptSigner
    const writer = yield* DecisionWriter
    const outbound = yield* OutboundGuard
    const sql = yield* SqlClient.SqlClient
    const { maxMatchContentBytes } = yield* AppConfig
    const activeGrant = (workspaceId: string, intentId: string) =>
      sql<{ intent_id: string; granted_by: string; expires_at: Date }>`
        select intent_id, granted_by, expires_at from approval_grants
        where workspace_id = ${workspaceId} and intent_id = ${intentId} and expires_at > now()`.pipe(
        Effect.map((rows) => Option.fromNullable(rows[0]))
      )

    /** A human grants the approval an intent asked for, for `ttlSeconds`. */
    const grant = (
      caller: Caller,
      intentId: string,
      input: { readonly note?: string | undefined; readonly ttl_seconds?: number | undefined }
    ) =>
      sql<{ intent_id: string; granted_by: string; expires_at: Date; created_at: Date }>`
        insert into approval_grants (workspace_id, intent_id, granted_by, note, expires_at)
        values (${caller.workspaceId}, ${intentId}, ${caller.principalId}, ${input.note ?? null},
                now() + make_interval(secs => ${input.ttl_seconds ?? 900}))
        on conflict (workspace_id, intent_id) do update set granted_by = excluded.granted_by, note = excluded.note,
          expires_at = excluded.expires_at, created_at = now()
        returning intent_id, granted_by, expires_at, created_at`.pipe(
        Effect.orDie,
        Effect.map((rows) => ({
          intent_id: rows[0]!.intent_id,
          granted_by: rows[0]!.granted_by,
          expires_at: rows[0]!.expires_at.toISOString(),
          created_at: rows[0]!.created_at.toISOString()
        }))
      )

    const authorize = (caller: Caller, event: ProposedEventInput) =>
      Effect.gen(function* () {
        const started = performance.now()
        const { principal } = event
        // A property of the body alone, like its schema: refused whole before anything else is looked up.
        const oversized = oversizedTarget(event.action, maxMatchContentBytes)
        if (oversized !== null) return yield* contentTooLarge(oversized, maxMatchContentBytes)
        if (principal.workspace_id !== caller.workspaceId) {
          return yield* new NotFound({
            code: "workspace_not_found",
            message: "principal.workspace_id must be the workspace of your credential."
          })
        }
        if (caller.environmentId !== null && caller.environmentId !== principal.environment_id) {
          return yield* new Forbidden({
            code: "environment_mismatch",
            message: "This runtime key is bound to another environment than principal.environment_id."
          })
        }
        let config = yield* settings.runtimeConfig(caller.workspaceId)
        if (!config.environments.has(principal.environment_id)) {
          // Maybe created (on another instance) since the cached copy was read: look once more before answering 404.
          config = yield* settings.reloadRuntimeConfig(caller.workspaceId)
        }
        const environment = config.environments.get(principal.environment_id)
        if (environment === undefined) {
          return yield* new NotFound({
            code: "environment_not_found",
            message: `Environment ${principal.environment_id} does not exist in this workspace.`
          })
        }
        const intentId = intentIdOf(caller.workspaceId, event)
        const modes = modesOf(config, environment)
        const evaluated = yield* Effect.gen(function* () {
          const snapshot = yield* snapshots.get(caller.workspaceId)
          const grantRow = needsGrant(snapshot, event, modes) ? yield* activeGrant(caller.workspaceId, intentId) : Option.none()
          return {
            decision: evaluate(snapshot, event, modes, Option.isSome(grantRow), config.settings.default_action),
            grantRow
          }
        }).pipe(
          Effect.catchAllCause((cause) =>
            Effect.logError("authorization failed closed", cause).pipe(
              Effect.as({
                decision: failClosed("The guardrail registry could not be read; the action is deferred.", {
                  failure: Cause.pretty(cause).split("\n")[0]
                }),
                grantRow: Option.none<{ intent_id: string; granted_by: string; expires_at: Date }>()
              })
            )
          )
        )
        const { decision, grantRow } = evaluated
        const appliedGrant = Option.match(grantRow, {
          onNone: () => null,
          onSome: (row) => ({
            intent_id: row.intent_id,
            granted_by: row.granted_by,
            expires_at: row.expires_at.toISOString()
          })
        })
        const { response, record, escalation } = decisionOutcome({
          caller,
          event,
          config,
          environment,
          intentId,
          decision,
          appliedGrant,
          startedAt: started,
          sign: signer.signNow
        })
        const recorded = yield* writer.write(record)
        yield* recordDecision(recorded ? decision.effect : "defer")
        yield* logDecisionDetails(config.settings, record.trace.id, decision)
        if (!recorded) return unrecordedAnswer(response)
        if (escalation !== null) yield* notifyEscalation(outbound, escalation.url, escalation.notice)
        return response
      })

    const receipt = (workspaceId: string, id: string) =>
      sql<{ jws: string; trace_id: string; created_at: Date }>`
        select jws, trace_id, created_at from receipts where workspace_id = ${workspaceId} and id = ${id}`.pipe(
        Effect.orDie,
        Effect.flatMap((rows) =>
          Option.match(Option.fromNullable(rows[0]), {
            onNone: () =>
              Effect.fail(new NotFound({ code: "receipt_not_found", message: `No receipt ${id} in this workspace.` })),
            onSome: (row) =>
              Effect.succeed({
                receipt_id: id,
                trace_id: row.trace_id,
                jws: row.jws,
                created_at: row.created_at.toISOString()
              })
          })
        )
      )

    /** The direct path of `POST /v1/events` (DecideDirect.ts), over this service's writer and signer. */
    const direct = yield* makeDirectDecisions

    return { authorize, direct, receipt, grant, jwks: signer.jwks }
  }),
  dependencies: [ReceiptSigner.Default, DecisionWriter.Default, OutboundGuard.Default]
}) {}
