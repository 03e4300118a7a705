/**
 * A budget alert's webhook URL is checked (its host resolved, up to 3 s)
 * before the write's transaction opens: while the lookups of creates and
 * patches wait on a DNS server that does not answer, none of them holds a
 * pooled database connection in an open transaction, so a few such requests
 * cannot starve every other request of connections. The writes stay in the
 * audit chain, attributed to their caller.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { until } from "../support/Eventually.js"
import { heldTransactions, slowDns } from "../support/SlowDns.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, TestDatabaseUrl, testServerWithDatabase } from "../support/TestServer.js"
import { createAlert } from "./billing-helpers.js"

const SLOW_HOST = "slow-dns.example.com"
const SLOW_URL = `https://${SLOW_HOST}/hook`

/** When each lookup of SLOW_HOST started; none of them ever answers. */
const { lookups, resolver } = slowDns(SLOW_HOST)

layer(testServerWithDatabase("database", {}, resolver), SERVER_OPTIONS)("budget alert URL checks", (it) => {
  it.effect("creates and patches waiting on DNS hold no database connection in a transaction", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const db = yield* TestDatabaseUrl
      const owner = yield* tenant(base)
      const payload = { name: "slow dns", threshold_type: "absolute", threshold_value: 1, window: "day" } as const
      const existing = yield* createAlert(owner.api, payload)

      const waiting = yield* Effect.fork(
        Effect.all(
          [
            ...[1, 2, 3].map(() => createAlert(owner.api, { ...payload, webhook_url: SLOW_URL })),
            owner.api.budgetAlerts.updateBudgetAlert({ path: { id: existing.id }, payload: { webhook_url: SLOW_URL } })
          ],
          { concurrency: "unbounded" }
        )
      )
      yield* until(
        Effect.sync(() => expect(lookups).toHaveLength(4)),
        "30 seconds"
      )
      expect(yield* heldTransactions(db, new Date())).toBe(0)

      // A name that does not resolve at save time is accepted (docs/outbound.md): every write then goes through.
      const written = yield* Fiber.join(waiting)
      expect(written.map((config) => config.webhook_url)).toEqual([SLOW_URL, SLOW_URL, SLOW_URL, SLOW_URL])
      expect((yield* owner.api.budgetAlerts.listBudgetAlerts({})).configs).toHaveLength(4)

      // Every write is still in the audit chain, attributed to its caller.
      yield* owner.api.budgetAlerts.deleteBudgetAlert({ path: { id: existing.id } })
      const audit = yield* owner.api.auditEvents.listAuditEvents({ urlParams: { resource_type: "budget_alert" } })
      expect(
        audit.audit_events.filter((event) => event.resource_id === existing.id).map((event) => event.action)
      ).toEqual(["budget_alert.delete", "budget_alert.update", "budget_alert.create"])
      expect(audit.audit_events).toHaveLength(6)
      for (const event of audit.audit_events) expect(event.actor).toEqual({ kind: "user", id: owner.user_id })
    })
  )
})
