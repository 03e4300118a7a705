/**
 * The webhook delivery worker: fair between workspaces (a workspace whose
 * receiver hangs holds at most MAX_IN_FLIGHT_PER_WORKSPACE (4) of its
 * attempts, however many of its deliveries are due, so another workspace's
 * webhook is delivered meanwhile), retries follow the config's
 * webhook_url when it is changed, a disabled alert's pending delivery waits
 * (and goes out when it is enabled again), and every attempt connects only where the
 * outbound guard checked (a name rebound to loopback after it was saved is
 * refused, unconnected, and not retried).
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { until } from "../support/Eventually.js"
import { tenant } from "../support/Tenants.js"
import { queryDatabase } from "../support/Database.js"
import { baseUrl, SERVER_OPTIONS, TestDatabaseUrl, testServerWithDatabase } from "../support/TestServer.js"
import { connectionCounter, scriptedResolver } from "../platform/outbound-helpers.js"
import {
  deliveriesOf,
  firstCentAlert,
  publishUsage,
  untilReceived,
  usageMessage,
  verifyStandardWebhook,
  WEBHOOK_SETTINGS,
  webhookReceiver
} from "./billing-helpers.js"

const { resolver } = scriptedResolver({
  // Public when the alert is saved, loopback when its webhook is delivered (DNS rebinding).
  "hooks.rebind.test": [["93.184.216.34"], ["127.0.0.1"]]
})

/** The alert's one delivery once its status is `status` (waiting for the worker), with its attempts. */
const untilDelivery = (
  api: Parameters<typeof deliveriesOf>[0],
  alertId: Parameters<typeof deliveriesOf>[1],
  status: string
) =>
  until(
    Effect.map(deliveriesOf(api, alertId), (list) => {
      expect(list.map((delivery) => delivery.status)).toEqual([status])
      return list
    }),
    "30 seconds"
  )

/** More than the worker's whole attempt budget before the fix (16 at once). */
const HANGING_CONFIGS = 20

// WEBHOOK_MAX_ATTEMPTS is the default (8): a failing delivery stays pending for seconds, long enough to move it.
layer(testServerWithDatabase("kafka", WEBHOOK_SETTINGS, resolver), SERVER_OPTIONS)("webhook delivery", (it) => {
  it.scoped("one workspace's hanging receiver holds 4 attempts at most; another workspace's webhook is delivered", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const noisy = yield* tenant(base)
      const quiet = yield* tenant(base)
      const hanging = yield* webhookReceiver(() => 0)
      const healthy = yield* webhookReceiver(() => 204)
      for (let n = 0; n < HANGING_CONFIGS; n++) {
        yield* firstCentAlert(noisy.api, `hanging ${n}`, hanging.url)
      }
      yield* publishUsage([usageMessage({ workspaceId: noisy.workspaceId, effectiveAt: "2026-08-01T09:00:00.000Z" })])
      yield* untilReceived(hanging, 4)

      const alert = yield* firstCentAlert(quiet.api, "quiet tenant", healthy.url)
      yield* publishUsage([usageMessage({ workspaceId: quiet.workspaceId, effectiveAt: "2026-08-01T10:00:00.000Z" })])
      // Delivered while the noisy workspace's attempts still hang (they end only after 50 s).
      yield* untilDelivery(quiet.api, alert.id, "succeeded")
      expect(healthy.received).toHaveLength(1)
      // The noisy workspace never had more than 4 attempts open: the other 16 deliveries wait their turn.
      expect(hanging.received).toHaveLength(4)
    })
  )

  it.scoped("retries of a pending delivery go to the new webhook_url once the config's URL is changed", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const broken = yield* webhookReceiver(() => 503)
      const fixed = yield* webhookReceiver(() => 204)
      const alert = yield* firstCentAlert(owner.api, "receiver moves", broken.url)
      yield* publishUsage([usageMessage({ workspaceId: owner.workspaceId, effectiveAt: "2026-08-02T09:00:00.000Z" })])
      yield* untilReceived(broken, 1)
      yield* owner.api.budgetAlerts.updateBudgetAlert({ path: { id: alert.id }, payload: { webhook_url: fixed.url } })
      const [delivery] = yield* untilDelivery(owner.api, alert.id, "succeeded")
      expect(delivery!.url).toBe(fixed.url)
      // The same delivery (webhook-id) as the failed attempts, signed with the config's secret.
      expect(fixed.received).toHaveLength(1)
      expect(fixed.received[0]!.headers["webhook-id"]).toBe(delivery!.id)
      expect(verifyStandardWebhook(alert.webhook_secret, fixed.received[0]!.headers, fixed.received[0]!.body)).toBe(
        true
      )
      expect(delivery!.attempts.at(-1)).toMatchObject({ response_status: 204, succeeded: true })
      expect(delivery!.attempts[0]).toMatchObject({ response_status: 503, succeeded: false })
    })
  )

  it.scoped(
    "a webhook host rebound to loopback after it was saved is refused at delivery: no connection, no retry",
    () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const counter = yield* connectionCounter
        const alert = yield* firstCentAlert(owner.api, "rebinding", `https://hooks.rebind.test:${counter.port}/hook`)
        yield* publishUsage([usageMessage({ workspaceId: owner.workspaceId, effectiveAt: "2026-08-03T09:00:00.000Z" })])
        const [delivery] = yield* untilDelivery(owner.api, alert.id, "failed")
        expect(delivery!.attempts).toHaveLength(1)
        expect(delivery!.attempts[0]).toMatchObject({ response_status: null, succeeded: false })
        expect(delivery!.attempts[0]!.error).toMatch(/^refused: .*127\.0\.0\.1/)
        expect(counter.connections()).toBe(0)
      })
  )
})

// A retry base of 2 minutes: a failed attempt's retry is due a minute later at the earliest.
layer(
  testServerWithDatabase("kafka", { ...WEBHOOK_SETTINGS, WEBHOOK_RETRY_BASE_MS: "120000" }, resolver),
  SERVER_OPTIONS
)("webhook delivery of a disabled alert", (it) => {
  it.scoped("a disabled alert's pending delivery is not attempted; enabled again, it is delivered", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const db = yield* TestDatabaseUrl
      const owner = yield* tenant(base)
      const broken = yield* webhookReceiver(() => 503)
      const healthy = yield* webhookReceiver(() => 204)
      const alert = yield* firstCentAlert(owner.api, "turned off", broken.url)
      yield* publishUsage([usageMessage({ workspaceId: owner.workspaceId, effectiveAt: "2026-08-03T09:00:00.000Z" })])
      // Until the worker has recorded the 503 (the receiver sees the request before that): recorded later, the
      // attempt's retry time would overwrite the one set below. Its retry is a minute away at the earliest (this
      // server's retry base), so none can start before the alert is disabled.
      yield* until(
        Effect.map(deliveriesOf(owner.api, alert.id), (list) => {
          expect(list.map((delivery) => delivery.attempts.length)).toEqual([1])
        }),
        "30 seconds"
      )
      yield* owner.api.budgetAlerts.updateBudgetAlert({ path: { id: alert.id }, payload: { enabled: false } })
      // Due at once, and older than any other delivery: the next claim would take it first.
      const due = "2026-01-01T00:00:00.000Z"
      yield* queryDatabase(db, "update webhook_deliveries set next_attempt_at = $1 where config_id = $2", [
        due,
        alert.id
      ])

      // Another alert's webhook is claimed and delivered; the disabled one's delivery was never claimed.
      const other = yield* firstCentAlert(owner.api, "still on", healthy.url)
      yield* publishUsage([usageMessage({ workspaceId: owner.workspaceId, effectiveAt: "2026-08-03T10:00:00.000Z" })])
      yield* untilDelivery(owner.api, other.id, "succeeded")
      const [held] = yield* deliveriesOf(owner.api, alert.id)
      expect(held).toMatchObject({ status: "pending", attempts: [expect.objectContaining({ response_status: 503 })] })
      expect(new Date(held!.next_attempt_at!).toISOString()).toBe(due)
      expect(broken.received).toHaveLength(1)

      // Enabled again (with a receiver that answers), the same delivery goes out.
      yield* owner.api.budgetAlerts.updateBudgetAlert({
        path: { id: alert.id },
        payload: { enabled: true, webhook_url: healthy.url }
      })
      yield* untilDelivery(owner.api, alert.id, "succeeded")
    })
  )
})
