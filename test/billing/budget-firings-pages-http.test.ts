/**
 * `GET /v1/financial/budget-alerts/{id}/firings` pages: a config fires once
 * per window for as long as it exists, so the list is newest first, 50 a
 * page by default and at most MAX_FIRINGS_PAGE, with `next_cursor` to page
 * further; every firing is reached exactly once. A firing's amounts stay
 * JSON integers however large the window's total.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { MAX_FIRINGS_PAGE } from "../../src/billing/BudgetAlerts.js"
import { queryDatabase } from "../support/Database.js"
import { call, expectError } from "../support/Raw.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, TestDatabaseUrl, testServerWithDatabase } from "../support/TestServer.js"
import { until } from "../support/Eventually.js"
import { createAlert, firingsOf, patchSettings, publishUsage, usageMessage } from "./billing-helpers.js"

const FIRINGS = MAX_FIRINGS_PAGE + 10

layer(testServerWithDatabase("database"), SERVER_OPTIONS)("budget alert firings pages", (it) => {
  it.effect("newest first, 50 by default, at most MAX_FIRINGS_PAGE, every firing once through next_cursor", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const alert = yield* createAlert(owner.api, {
        name: "daily",
        threshold_type: "percent",
        threshold_value: 80,
        window: "day"
      })
      // One firing a day for FIRINGS days; the newest is f0.
      yield* queryDatabase(
        yield* TestDatabaseUrl,
        `insert into budget_alert_firings (id, config_id, workspace_id, meter, currency, cap_minor, spent_minor,
                                           time_window, window_start, threshold_amount, fired_at, payload)
         select 'f' || i, $1, $2, 'llm_spend', 'USD', 100, 90, 'day',
                timestamptz '2026-01-01' - make_interval(days => i), 80,
                timestamptz '2026-01-01' - make_interval(days => i), '{}'
         from generate_series(0, $3 - 1) i`,
        [alert.id, owner.workspaceId, FIRINGS]
      )
      const path = { id: alert.id }
      const first = yield* owner.api.budgetAlerts.listBudgetAlertFirings({ path, urlParams: {} })
      expect(first.firings).toHaveLength(50)
      expect(first.firings[0]?.id).toBe("f0")
      expect(first.next_cursor).toBeDefined()

      const seen: Array<string> = []
      let cursor: string | undefined
      do {
        const page = yield* owner.api.budgetAlerts.listBudgetAlertFirings({
          path,
          urlParams: { limit: 100_000, ...(cursor === undefined ? {} : { cursor }) }
        })
        expect(page.firings.length).toBeLessThanOrEqual(MAX_FIRINGS_PAGE)
        seen.push(...page.firings.map((firing) => firing.id))
        cursor = page.next_cursor
      } while (cursor !== undefined)
      expect(seen).toEqual(Array.from({ length: FIRINGS }, (_, i) => `f${i}`))

      const url = `/v1/financial/budget-alerts/${alert.id}/firings`
      expectError(yield* call(base, "GET", `${url}?limit=0`, { token: owner.jwt }), 400)
      expectError(yield* call(base, "GET", `${url}?cursor=nonsense`, { token: owner.jwt }), 400)
    })
  )

  it.effect("a window total past 2^53 cents fires with the largest exact integer, and the firings list answers", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      // Prices and token counts are the caller's: 3 calls of 4 x 10^15 cents pass a threshold of 10^16.
      yield* patchSettings(owner.api, { llm_budget: { cap_minor: 100_000_000_000, currency: "usd", window: "month" } })
      const alert = yield* createAlert(owner.api, {
        name: "absurd",
        threshold_type: "percent",
        threshold_value: 10_000_000,
        window: "month"
      })
      const costMinor = 4_000_000_000_000_000
      const usage = [1, 2, 3].map((hour) =>
        usageMessage({
          workspaceId: owner.workspaceId,
          effectiveAt: `2026-09-01T0${hour}:00:00.000Z`,
          costMinor,
          costUsdNanos: (BigInt(costMinor) * 10_000_000n).toString()
        })
      )
      yield* publishUsage(usage)
      const [firing] = yield* until(
        Effect.map(firingsOf(owner.api, alert.id), (firings) => {
          expect(firings).toHaveLength(1)
          return firings
        }),
        "30 seconds"
      )
      expect(firing).toMatchObject({ spent_minor: Number.MAX_SAFE_INTEGER, cap_minor: 100_000_000_000 })
    })
  )
})
