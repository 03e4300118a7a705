/**
 * Budget alert firings end to end over Kafka: llm_spend from llm-usage
 * messages (as the gateway produces them) and actions from authorization
 * decisions, over UTC day and month windows, fired exactly once per config
 * and window even when the same usage is delivered again; each firing
 * delivered to a loopback receiver signed per Standard Webhooks, retried
 * after failures, every attempt recorded.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import {
  createAlert,
  deliveriesOf,
  expectWindows,
  firingsOf,
  patchSettings,
  publishUsage,
  usageIds,
  usageMessage,
  verifyStandardWebhook,
  WEBHOOK_SETTINGS,
  webhookReceiver
} from "./billing-helpers.js"
import { createAgent, proposeCall, reply } from "../support/Events.js"
import { until } from "../support/Eventually.js"

const SETTINGS = { ...WEBHOOK_SETTINGS, WEBHOOK_MAX_ATTEMPTS: "3" }

layer(testServer("kafka", SETTINGS), SERVER_OPTIONS)("budget alert firings and webhooks (Kafka event log)", (it) => {
  it.scoped("llm_spend fires once per config and window, redelivery included; webhooks are signed and retried", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const ws = owner.workspaceId
      // The receiver fails the first two attempts of every webhook-id, then accepts.
      const receiver = yield* webhookReceiver((attempt) => (attempt <= 2 ? 500 : 200))
      yield* patchSettings(owner.api, { llm_budget: { cap_minor: 100, currency: "usd", window: "month" } })

      const half = yield* createAlert(owner.api, {
        name: "half the budget, daily",
        threshold_type: "percent",
        threshold_value: 50,
        window: "day",
        webhook_url: receiver.url
      })
      const principalB = yield* createAlert(owner.api, {
        name: "prn_b monthly",
        threshold_type: "absolute",
        threshold_value: 30,
        window: "month",
        principal_id: "prn_b"
      })
      const disabled = yield* createAlert(owner.api, {
        name: "off",
        threshold_type: "absolute",
        threshold_value: 1,
        window: "day",
        enabled: false
      })

      const day1 = (time: string) => `2026-05-10T${time}Z`
      const u1 = usageMessage({
        workspaceId: ws,
        effectiveAt: day1("01:00:00.000"),
        principalId: "prn_a",
        costMinor: 30
      })
      const u2 = usageMessage({
        workspaceId: ws,
        effectiveAt: day1("02:00:00.000"),
        principalId: "prn_a",
        costMinor: 25
      })
      const u3 = usageMessage({
        workspaceId: ws,
        effectiveAt: day1("03:00:00.000"),
        principalId: "prn_b",
        costMinor: 20
      })
      const u4 = usageMessage({
        workspaceId: ws,
        effectiveAt: day1("04:00:00.000"),
        principalId: "prn_b",
        costMinor: 15
      })
      const firstEventIds = yield* publishUsage([u1, u2, u3, u4])
      yield* until(
        Effect.map(firingsOf(owner.api, principalB.id), (firings) => expect(firings).toHaveLength(1)),
        "30 seconds"
      )

      // The same usage again: new event ids (a duplicate publish), and the very same event id.
      yield* publishUsage([u1, u2, u3, u4])
      yield* publishUsage([u2], [firstEventIds[1]!])
      // Next UTC day, and a late event for day 1 that would cross the threshold again.
      const u5 = usageMessage({
        workspaceId: ws,
        effectiveAt: "2026-05-11T00:00:00.000Z",
        principalId: "prn_a",
        costMinor: 60
      })
      const u6 = usageMessage({
        workspaceId: ws,
        effectiveAt: day1("23:59:59.999"),
        principalId: "prn_a",
        costMinor: 100
      })
      const sentinel = usageMessage({ workspaceId: ws, effectiveAt: "2026-05-12T00:00:00.000Z", costMinor: 1 })
      yield* publishUsage([u5, u6, sentinel])
      // One key, one partition, in order: once the sentinel is stored, everything before it was applied.
      yield* until(
        Effect.map(usageIds(owner.api), (ids) => expect(ids).toContain(sentinel.id)),
        "30 seconds"
      )
      expect((yield* usageIds(owner.api)).sort()).toEqual(
        [u1.id, u2.id, u3.id, u4.id, u5.id, u6.id, sentinel.id].sort()
      )

      const halfFirings = yield* firingsOf(owner.api, half.id)
      expectWindows(halfFirings, ["2026-05-10T00:00:00.000Z", "2026-05-11T00:00:00.000Z"])
      const firstDay = halfFirings.find((firing) => firing.window_start.startsWith("2026-05-10"))!
      expect(firstDay).toMatchObject({
        config_id: half.id,
        meter: "llm_spend",
        currency: "usd",
        cap_minor: 100,
        spent_minor: 55,
        principal_id: null,
        payload: { threshold_type: "percent", threshold_value: 50, threshold_amount: 50, window: "day" }
      })
      const prnB = yield* firingsOf(owner.api, principalB.id)
      expectWindows(prnB, ["2026-05-01T00:00:00.000Z"])
      expect(prnB[0]).toMatchObject({ spent_minor: 35, principal_id: "prn_b", cap_minor: 100 })
      expect(yield* firingsOf(owner.api, disabled.id)).toEqual([])

      // Two deliveries (one per firing), each: 500, 500, then 200 — all attempts recorded.
      const deliveries = yield* until(
        Effect.map(deliveriesOf(owner.api, half.id), (list) => {
          expect(list.map((delivery) => delivery.status)).toEqual(["succeeded", "succeeded"])
          return list
        }),
        "30 seconds"
      )
      expect(deliveries.map((delivery) => delivery.firing_id).sort()).toEqual(
        halfFirings.map((firing) => firing.id).sort()
      )
      for (const delivery of deliveries) {
        expect(delivery.url).toBe(receiver.url)
        expect(delivery.attempt_count).toBe(3)
        expect(delivery.next_attempt_at).toBeNull()
        expect(
          delivery.attempts.map((attempt) => [attempt.attempt, attempt.response_status, attempt.succeeded])
        ).toEqual([
          [1, 500, false],
          [2, 500, false],
          [3, 200, true]
        ])
        expect(delivery.attempts[0]!.error).toMatch(/500/)
        const times = delivery.attempts.map((attempt) => Date.parse(attempt.attempted_at))
        expect(times[1]! - times[0]!).toBeGreaterThanOrEqual(40)
      }

      // The receiver saw 6 requests, every one verifying with the secret from creation.
      expect(receiver.received).toHaveLength(6)
      for (const request of receiver.received) {
        expect(verifyStandardWebhook(half.webhook_secret, request.headers, request.body)).toBe(true)
        expect(verifyStandardWebhook(principalB.webhook_secret, request.headers, request.body)).toBe(false)
        expect(request.headers["content-type"]).toBe("application/json")
      }
      expect(new Set(receiver.received.map((request) => request.headers["webhook-id"]))).toEqual(
        new Set(deliveries.map((delivery) => delivery.id))
      )
      const body: unknown = JSON.parse(
        receiver.received.find(
          (request) => request.headers["webhook-id"] === deliveries.find((d) => d.firing_id === firstDay.id)!.id
        )!.body
      )
      expect(body).toMatchObject({
        type: "budget_alert.fired",
        timestamp: firstDay.fired_at,
        data: {
          id: firstDay.id,
          config_id: half.id,
          spent_minor: 55,
          cap_minor: 100,
          window_start: firstDay.window_start
        }
      })
      // A tampered body does not verify.
      const sample = receiver.received[0]!
      expect(verifyStandardWebhook(half.webhook_secret, sample.headers, sample.body.replace("55", "56"))).toBe(false)
    })
  )

  it.scoped("a receiver that keeps failing gets WEBHOOK_MAX_ATTEMPTS attempts with growing delays, then failed", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const receiver = yield* webhookReceiver(() => 503)
      const alert = yield* createAlert(owner.api, {
        name: "any spend",
        threshold_type: "absolute",
        threshold_value: 1,
        window: "month",
        webhook_url: receiver.url
      })
      yield* publishUsage([
        usageMessage({ workspaceId: owner.workspaceId, effectiveAt: "2026-06-15T12:00:00.000Z", costMinor: 5 })
      ])
      const [delivery] = yield* until(
        Effect.map(deliveriesOf(owner.api, alert.id), (list) => {
          expect(list.map((entry) => entry.status)).toEqual(["failed"])
          return list
        }),
        "30 seconds"
      )
      expect(
        delivery!.attempts.map((attempt) => [attempt.attempt, attempt.response_status, attempt.succeeded])
      ).toEqual([
        [1, 503, false],
        [2, 503, false],
        [3, 503, false]
      ])
      expect(delivery!.next_attempt_at).toBeNull()
      const times = delivery!.attempts.map((attempt) => Date.parse(attempt.attempted_at))
      // Base 100 ms doubling with ±50% jitter: at least 50 ms, then at least 100 ms.
      expect(times[1]! - times[0]!).toBeGreaterThanOrEqual(50)
      expect(times[2]! - times[1]!).toBeGreaterThanOrEqual(100)
      expect(receiver.received).toHaveLength(3)
      expect(new Set(receiver.received.map((request) => request.headers["webhook-id"]))).toEqual(
        new Set([delivery!.id])
      )
      for (const request of receiver.received) {
        expect(verifyStandardWebhook(alert.webhook_secret, request.headers, request.body)).toBe(true)
      }
    })
  )

  it.scoped("a receiver that never answers holds up neither consumption nor other deliveries", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const hanging = yield* webhookReceiver(() => 0)
      const healthy = yield* webhookReceiver(() => 204)
      const stuck = yield* createAlert(owner.api, {
        name: "stuck receiver",
        threshold_type: "absolute",
        threshold_value: 1,
        window: "day",
        webhook_url: hanging.url
      })
      const fine = yield* createAlert(owner.api, {
        name: "healthy receiver",
        threshold_type: "absolute",
        // Crossed only by the second usage record, while the first firing's attempt hangs.
        threshold_value: 15,
        window: "month",
        webhook_url: healthy.url
      })
      const first = usageMessage({ workspaceId: owner.workspaceId, effectiveAt: "2026-07-01T09:00:00.000Z" })
      yield* publishUsage([first])
      yield* until(
        Effect.sync(() => expect(hanging.received).toHaveLength(1)),
        "30 seconds"
      )
      // While that attempt hangs (WEBHOOK_ATTEMPT_TIMEOUT_MS), later usage is stored and the other webhook is delivered.
      const second = usageMessage({ workspaceId: owner.workspaceId, effectiveAt: "2026-07-02T09:00:00.000Z" })
      yield* publishUsage([second])
      yield* until(
        Effect.map(usageIds(owner.api), (ids) => expect(ids).toContain(second.id)),
        "30 seconds"
      )
      yield* until(
        Effect.map(deliveriesOf(owner.api, fine.id), (list) =>
          expect(list.map((delivery) => delivery.status)).toEqual(["succeeded"])
        ),
        "30 seconds"
      )
      // The hanging attempt has not ended (no attempt recorded) while the other webhook was delivered.
      const [pending] = yield* deliveriesOf(owner.api, stuck.id)
      expect(pending!.status).toBe("pending")
      expect(pending!.attempts).toEqual([])
      expect(yield* firingsOf(owner.api, stuck.id)).toHaveLength(2)
    })
  )

  it.effect("the actions meter counts authorization decisions against config.action_budget.cap", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      yield* createAgent(base, owner, "support-bot")
      yield* patchSettings(owner.api, { action_budget: { cap: 3 } })
      const all = yield* createAlert(owner.api, {
        name: "all actions",
        meter: "actions",
        threshold_type: "percent",
        threshold_value: 100,
        window: "day"
      })
      const otherAgent = yield* createAlert(owner.api, {
        name: "another agent",
        meter: "actions",
        threshold_type: "absolute",
        threshold_value: 1,
        window: "day",
        principal_id: "billing-bot"
      })
      const spendOnly = yield* createAlert(owner.api, {
        name: "spend",
        threshold_type: "absolute",
        threshold_value: 1,
        window: "day"
      })
      for (let n = 0; n < 2; n++) yield* proposeCall(base, owner, "support-bot", reply("Your order ships tomorrow."))
      yield* Effect.sleep("1 second")
      expect(yield* firingsOf(owner.api, all.id)).toEqual([])
      for (let n = 0; n < 2; n++) yield* proposeCall(base, owner, "support-bot", reply("Your order ships tomorrow."))
      const [firing] = yield* until(
        Effect.map(firingsOf(owner.api, all.id), (firings) => {
          expect(firings).toHaveLength(1)
          return firings
        }),
        "30 seconds"
      )
      const now = new Date()
      expect(firing).toMatchObject({
        meter: "actions",
        currency: "actions",
        cap_minor: 3,
        spent_minor: 3,
        window_start: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate())).toISOString()
      })
      yield* Effect.sleep("500 millis")
      expect(yield* firingsOf(owner.api, all.id)).toHaveLength(1)
      expect(yield* firingsOf(owner.api, otherAgent.id)).toEqual([])
      expect(yield* firingsOf(owner.api, spendOnly.id)).toEqual([])
    })
  )
})
