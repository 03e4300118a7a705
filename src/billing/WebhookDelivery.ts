/**
 * Webhook delivery of budget alert firings, in the stream worker:
 * - the `budget-webhooks` consumer of `budget-firings` turns each firing of a
 *   config with a `webhook_url` into a durable delivery row (once per firing);
 * - a delivery loop, a fiber of its own so consumption never waits on a
 *   receiver, claims due deliveries (with a lease, so several workers never
 *   attempt the same one), POSTs them signed per Standard Webhooks, records
 *   every attempt and schedules the next with exponential backoff and jitter
 *   until a 2xx answer or WEBHOOK_MAX_ATTEMPTS. Calls go through the outbound
 *   guard (no internal addresses unless allowlisted, redirects not followed).
 */
import { Duration, Effect, Layer, Option, Redacted } from "effect"
import { keepRunning } from "../platform/Background.js"
import { AppConfig } from "../platform/Config.js"
import { consumeOnce, decodeDelivery } from "../platform/Consumer.js"
import { prefixedId } from "../platform/Ids.js"
import { isRedirect, OutboundGuard, redirectRefusal } from "../platform/OutboundGuard.js"
import { Secrets } from "../platform/Secrets.js"
import { makeSignal } from "../platform/Signal.js"
import { Topics } from "../platform/Topics.js"
import { AlertsRepo } from "./AlertsRepo.js"
import { type ClaimedDelivery, DeliveryRepo } from "./DeliveryRepo.js"
import { BudgetFiringMessage } from "./Domain.js"
import { deriveWebhookSecret, retryDelayMillis, signWebhook } from "./Webhooks.js"

const decodeFiring = decodeDelivery(BudgetFiringMessage)

/** Attempts this worker runs at once, and at once for one workspace (the rest of the slots stay for the others). */
const MAX_IN_FLIGHT = 32
const MAX_IN_FLIGHT_PER_WORKSPACE = 4
/** Longer than an attempt can take (WEBHOOK_ATTEMPT_TIMEOUT_MS is below it), so a claimed delivery is not claimed again while in flight. */
const LEASE_SECONDS = 60

interface Outcome {
  readonly responseStatus: number | null
  readonly error: string | null
  /** The outbound guard refused the address: not retried. */
  readonly refused: boolean
}

/** The receiver's answer is not used: read at most this much of it. */
const MAX_ANSWER_BYTES = 64 * 1024

/**
 * One signed POST through the outbound guard; never fails: a network error, timeout or refusal is an outcome.
 * A redirect is not followed (an error answer, retried); a refused address is final (`refused`).
 */
const post = (outbound: OutboundGuard, delivery: ClaimedDelivery, secret: string, timeoutMillis: number) =>
  Effect.suspend(() => {
    const timestamp = Math.floor(Date.now() / 1000)
    return outbound.post(new URL(delivery.url), {
      headers: {
        "content-type": "application/json",
        "user-agent": "guardrail-service",
        "webhook-id": delivery.id,
        "webhook-timestamp": String(timestamp),
        "webhook-signature": signWebhook(secret, delivery.id, timestamp, delivery.body)
      },
      body: delivery.body,
      timeoutMillis,
      maxResponseBytes: MAX_ANSWER_BYTES
    })
  }).pipe(
    Effect.map(({ status }): Outcome => ({
      responseStatus: status,
      refused: false,
      error:
        status >= 200 && status < 300
          ? null
          : isRedirect(status)
            ? `receiver ${redirectRefusal(status)}`
            : `receiver answered ${status}`
    })),
    Effect.catchAll((failure) =>
      Effect.succeed<Outcome>({
        responseStatus: null,
        refused: failure.reason === "refused",
        error: `${failure.reason}: ${failure.message}`.slice(0, 500)
      })
    )
  )

export const WebhookDeliveryLive = Layer.scopedDiscard(
  Effect.gen(function* () {
    const config = yield* AppConfig
    const outbound = yield* OutboundGuard
    const alerts = yield* AlertsRepo
    const deliveries = yield* DeliveryRepo
    const serviceSecret = Redacted.value((yield* Secrets).jwtSecret)
    const created = yield* makeSignal

    yield* consumeOnce({
      group: "budget-webhooks",
      topics: [Topics.budgetFirings],
      // A message that does not decode is dead-lettered with the reason (Consumer.ts).
      handle: (delivery) =>
        Effect.flatMap(decodeFiring(delivery), (firing) =>
          Effect.gen(function* () {
            const found = yield* alerts.findConfig(firing.workspace_id, firing.config_id)
            if (Option.isNone(found) || found.value.webhook_url === null) return
            const { schema_version: _, ...data } = firing
            yield* deliveries.insert({
              id: prefixedId("msg"),
              firing_id: firing.id,
              config_id: firing.config_id,
              workspace_id: firing.workspace_id,
              url: found.value.webhook_url,
              body: JSON.stringify({
                type: "budget_alert.fired",
                timestamp: firing.fired_at,
                data: { ...data, config_name: found.value.name }
              })
            })
            yield* created.fire
          })
        )
    }).pipe(Effect.forkScoped)

    const attempt = Effect.fn("WebhookDelivery.attempt")(function* (delivery: ClaimedDelivery) {
      const number = delivery.attempt_count + 1
      const started = Date.now()
      const outcome: Outcome = URL.canParse(delivery.url)
        ? yield* post(
            outbound,
            delivery,
            deriveWebhookSecret(serviceSecret, delivery.config_id, delivery.secret_salt),
            config.webhookAttemptTimeoutMillis
          )
        : { responseStatus: null, refused: true, error: "webhook_url is not a URL" }
      const succeeded = outcome.error === null
      const status = succeeded
        ? "succeeded"
        : outcome.refused || number >= config.webhookMaxAttempts
          ? "failed"
          : "pending"
      yield* deliveries.recordAttempt(
        {
          delivery_id: delivery.id,
          attempt: number,
          attempted_at: new Date(started),
          duration_ms: Date.now() - started,
          response_status: outcome.responseStatus,
          error: outcome.error,
          succeeded
        },
        {
          status,
          next_attempt_at:
            status === "pending" ? new Date(Date.now() + retryDelayMillis(number, config.webhookRetryBaseMillis)) : null
        }
      )
      if (status === "failed") {
        yield* Effect.logWarning("budget alert webhook delivery gave up").pipe(
          Effect.annotateLogs({ delivery_id: delivery.id, attempts: number })
        )
      }
    })

    const idleMillis = Math.max(config.pollIntervalMillis * 2, 100)
    // Attempts run in fibers of their own (at most MAX_IN_FLIGHT at once, MAX_IN_FLIGHT_PER_WORKSPACE of one
    // workspace), so one slow receiver delays neither consumption, nor other deliveries, nor other tenants'
    // deliveries however many of its own are due; a finished attempt wakes the loop.
    const inFlight = new Map<string, number>()
    let running = 0
    const scope = yield* Effect.scope
    const settled = (workspaceId: string) =>
      Effect.suspend(() => {
        running -= 1
        const left = (inFlight.get(workspaceId) ?? 1) - 1
        if (left > 0) inFlight.set(workspaceId, left)
        else inFlight.delete(workspaceId)
        return created.fire
      })
    const runAttempt = (delivery: ClaimedDelivery) =>
      attempt(delivery).pipe(
        Effect.catchAllCause((cause) => Effect.logWarning("webhook attempt failed to record", cause)),
        Effect.ensuring(settled(delivery.workspace_id)),
        Effect.forkIn(scope)
      )
    const loop = Effect.gen(function* () {
      while (true) {
        const free = MAX_IN_FLIGHT - running
        const due =
          free > 0 ? yield* deliveries.claimDue(free, LEASE_SECONDS, MAX_IN_FLIGHT_PER_WORKSPACE, inFlight) : []
        if (due.length === 0) {
          yield* created.wait(Duration.millis(idleMillis))
          continue
        }
        for (const delivery of due) {
          running += 1
          inFlight.set(delivery.workspace_id, (inFlight.get(delivery.workspace_id) ?? 0) + 1)
        }
        yield* Effect.forEach(due, runAttempt, { discard: true })
      }
    })
    // Repository failures are defects (dieOnErrors): the loop restarts on them; leases make that safe.
    yield* Effect.forkScoped(keepRunning("webhook delivery loop", loop))
  })
)
