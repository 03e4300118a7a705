/**
 * Escalation notices: when a decision is escalated and the workspace has an
 * `escalation_webhook_url`, POST a JSON notice there in the background (the
 * decision never waits for it). Delivery is best effort with a 5 s timeout;
 * failures are logged. The trace is the durable record.
 */
import { Effect } from "effect"

export interface EscalationNotice {
  readonly type: "decision.escalated"
  readonly trace_id: string
  readonly receipt_id: string
  readonly workspace_id: string
  readonly agent_id: string
  readonly environment_id: string
  readonly reason: string
  readonly findings: ReadonlyArray<{ readonly requirement_id: string | null; readonly policy_id: string | null }>
  readonly decided_at: string
}

export const notifyEscalation = (url: string, notice: EscalationNotice) =>
  Effect.tryPromise({
    try: (signal) =>
      fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json", "user-agent": "guardrail-service" },
        body: JSON.stringify(notice),
        signal: AbortSignal.any([signal, AbortSignal.timeout(5_000)])
      }),
    catch: (error) => error
  }).pipe(
    Effect.flatMap((response) =>
      response.ok ? Effect.void : Effect.logWarning("escalation webhook answered an error", { status: response.status })
    ),
    Effect.catchAll((error) =>
      Effect.logWarning("escalation webhook could not be delivered", { error: String(error) })
    ),
    Effect.forkDaemon,
    Effect.asVoid
  )
