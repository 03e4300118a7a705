/**
 * What a workspace's `telemetry_enabled` governs: whether the details of its
 * decisions (the reason and, per finding, policy, requirement, source,
 * severity, effect and reason; never evidence or content) leave the system
 * of record for operators, i.e. the `details` field of its `decisions` topic
 * messages and the debug-level `decision` log line. When false, operators
 * see only the counts-and-ids fields of the topic, and no per-decision log.
 * Reasons are kept under the workspace's data handling mode like any text.
 */
import { Effect, LogLevel } from "effect"
import type { Decision } from "../authorization/Pipeline.js"
import { type DataHandlingMode, keepString } from "../privacy/Redaction.js"

interface TelemetrySettings {
  readonly telemetry_enabled: boolean
  readonly data_handling_mode: DataHandlingMode
}

type DecisionShape = Pick<Decision, "reason" | "findings">

const detailsOf = (settings: TelemetrySettings, decision: DecisionShape) => ({
  reason: keepString(settings.data_handling_mode, decision.reason),
  findings: decision.findings.map((finding) => ({
    policy_id: finding.policy_id,
    requirement_id: finding.requirement_id,
    source: finding.source,
    severity: finding.severity,
    effect: finding.effect,
    reason: keepString(settings.data_handling_mode, finding.reason)
  }))
})

/** The `details` field of a decisions message, or nothing when telemetry is off. */
export const decisionDetails = (settings: TelemetrySettings, decision: DecisionShape) =>
  settings.telemetry_enabled ? { details: detailsOf(settings, decision) } : {}

/** One debug-level `decision` log line with the details, only when telemetry is on (nothing is built below debug). */
export const logDecisionDetails = (settings: TelemetrySettings, traceId: string, decision: DecisionShape) =>
  settings.telemetry_enabled
    ? Effect.suspend(() =>
        Effect.logDebug("decision").pipe(
          Effect.annotateLogs({ trace_id: traceId, decision_details: detailsOf(settings, decision) })
        )
      ).pipe(Effect.whenLogLevel(LogLevel.Debug), Effect.asVoid)
    : Effect.void
