/**
 * Escalation notices: when a decision is escalated and the workspace has an
 * `escalation_webhook_url`, POST a JSON notice there in the background (the
 * decision never waits for it). Delivery is best effort with a 5 s timeout;
 * failures are logged. The trace is the durable record. The call goes
 * through the outbound guard: never to an internal address unless
 * allowlisted, and a redirect is not followed (logged as a failure).
 */
import { Effect } from "effect"
import { isRedirect, type OutboundGuard, redirectRefusal } from "../platform/OutboundGuard.js"

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

const TIMEOUT_MILLIS = 5_000
/** The receiver's answer is not used: read at most this much of it. */
const MAX_ANSWER_BYTES = 64 * 1024

/** One delivery of the notice; never fails (outcomes are logged). */
export const sendEscalation = (outbound: OutboundGuard, url: string, notice: EscalationNotice) =>
  Effect.suspend(() =>
    URL.canParse(url)
      ? outbound.post(new URL(url), {
          headers: { "content-type": "application/json", "user-agent": "guardrail-service" },
          body: JSON.stringify(notice),
          timeoutMillis: TIMEOUT_MILLIS,
          maxResponseBytes: MAX_ANSWER_BYTES
        })
      : Effect.fail(new Error("escalation_webhook_url is not a URL"))
  ).pipe(
    Effect.flatMap((answer) =>
      answer.status >= 200 && answer.status < 300
        ? Effect.void
        : Effect.logWarning("escalation webhook answered an error", {
            status: answer.status,
            ...(isRedirect(answer.status) ? { error: redirectRefusal(answer.status) } : {})
          })
    ),
    Effect.catchAll((error) => Effect.logWarning("escalation webhook could not be delivered", { error: error.message }))
  )

/** Sends the notice in the background: the decision never waits for it. */
export const notifyEscalation = (outbound: OutboundGuard, url: string, notice: EscalationNotice) =>
  Effect.asVoid(Effect.forkDaemon(sendEscalation(outbound, url, notice)))
