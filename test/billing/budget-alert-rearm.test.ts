/**
 * A budget alert whose threshold changes after it fired is armed again for
 * the new amount in the same window (before, one firing per config and
 * window was all: a raised threshold never fired until the next window). It
 * still fires once per amount: usage past an amount that fired does not
 * fire it again.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { until } from "../support/Eventually.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import { createAlert, firingsOf, publishUsage, usageMessage } from "./billing-helpers.js"

layer(testServer("database"), SERVER_OPTIONS)("budget alerts changed after firing", (it) => {
  it.effect("a changed threshold fires again in the same window, once per amount", () =>
    Effect.gen(function* () {
      const owner = yield* tenant(yield* baseUrl)
      const alert = yield* createAlert(owner.api, {
        name: "daily spend",
        threshold_type: "absolute",
        threshold_value: 15,
        window: "day"
      })
      // 10 cents at a time, all in one UTC day.
      let minute = 0
      const spendTenCents = Effect.suspend(() =>
        publishUsage([
          usageMessage({
            workspaceId: owner.workspaceId,
            effectiveAt: `2026-08-05T09:${String(minute++).padStart(2, "0")}:00.000Z`
          })
        ])
      )
      const untilFired = (amounts: ReadonlyArray<number>) =>
        until(
          Effect.map(firingsOf(owner.api, alert.id), (firings) => {
            expect(
              firings
                .map((firing) => [
                  (firing.payload as { threshold_amount: number }).threshold_amount,
                  firing.spent_minor
                ])
                .reverse()
            ).toEqual(amounts.map((amount) => [amount, Math.ceil(amount / 10) * 10]))
          }),
          "30 seconds"
        )

      yield* spendTenCents
      yield* spendTenCents
      yield* untilFired([15])
      yield* owner.api.budgetAlerts.updateBudgetAlert({ path: { id: alert.id }, payload: { threshold_value: 30 } })
      yield* spendTenCents
      yield* untilFired([15, 30])
      // Past 30 again: no second firing at 30. The next change shows the usage in between was counted.
      yield* spendTenCents
      yield* owner.api.budgetAlerts.updateBudgetAlert({ path: { id: alert.id }, payload: { threshold_value: 45 } })
      yield* spendTenCents
      yield* untilFired([15, 30, 45])
    })
  )
})
