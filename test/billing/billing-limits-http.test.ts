/**
 * Per-workspace caps of the billing domain: MAX_BUDGET_ALERTS_PER_WORKSPACE
 * budget alert configs and MAX_LLM_PRICES_PER_WORKSPACE priced models (set
 * low here). Past a cap a create is 409 with the cap's code, concurrent
 * creates cannot slip past it together, changing what is stored never meets
 * it, and other workspaces are not affected. And a model name's bound
 * matches the gateway's.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { expectFailure } from "../support/Api.js"
import { call, expectValidation } from "../support/Raw.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import { createAlert } from "./billing-helpers.js"

const SETTINGS = { MAX_BUDGET_ALERTS_PER_WORKSPACE: "3", MAX_LLM_PRICES_PER_WORKSPACE: "2" }

const alertPayload = (name: string) =>
  ({ name, threshold_type: "absolute", threshold_value: 5, window: "day" }) as const

layer(testServer("database", SETTINGS), SERVER_OPTIONS)("billing limits", (it) => {
  it.effect("budget alerts: the 4th of 3 is 409 budget_alert_limit_reached, even when sent at once", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const other = yield* tenant(base)
      const outcomes = yield* Effect.forEach(
        [1, 2, 3, 4, 5],
        (n) => Effect.either(createAlert(owner.api, alertPayload(`alert ${n}`))),
        { concurrency: "unbounded" }
      )
      expect(outcomes.filter((outcome) => outcome._tag === "Right")).toHaveLength(3)
      const error = yield* expectFailure(
        createAlert(owner.api, alertPayload("one too many")),
        409,
        "budget_alert_limit_reached"
      )
      expect(error.message).toMatch(/MAX_BUDGET_ALERTS_PER_WORKSPACE/)
      const listed = (yield* owner.api.budgetAlerts.listBudgetAlerts({})).configs
      expect(listed).toHaveLength(3)

      // Editing a stored config never meets the cap; another workspace has its own.
      yield* owner.api.budgetAlerts.updateBudgetAlert({ path: { id: listed[0]!.id }, payload: { name: "renamed" } })
      yield* createAlert(other.api, alertPayload("theirs"))
      // Deleting one makes room again.
      yield* owner.api.budgetAlerts.deleteBudgetAlert({ path: { id: listed[0]!.id } })
      yield* createAlert(owner.api, alertPayload("after a delete"))
    })
  )

  it.effect("prices: a 3rd model of 2 is 409 price_limit_reached; re-pricing a stored model is not", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const put = (model: string, input: number) =>
        owner.api.llmPricing.putLlmPrice({
          path: { model },
          payload: { input_per_million_minor: input, output_per_million_minor: 1 }
        })
      yield* put("model-a", 1)
      yield* put("model-b", 1)
      const error = yield* expectFailure(put("model-c", 1), 409, "price_limit_reached")
      expect(error.message).toMatch(/MAX_LLM_PRICES_PER_WORKSPACE/)
      // The same model, however it is written, is a change of a stored price.
      expect(yield* put(" MODEL-A ", 7)).toMatchObject({ model: "model-a", input_per_million_minor: 7 })
      expect((yield* owner.api.llmPricing.listLlmPrices({})).prices.map((price) => price.model)).toEqual([
        "model-a",
        "model-b"
      ])
      yield* owner.api.llmPricing.deleteLlmPrice({ path: { model: "model-b" } })
      yield* put("model-c", 1)
    })
  )

  it.effect("a model name as long as the gateway accepts (256) can be priced and filtered; longer is 400", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const longest = `org-${"m".repeat(252)}`
      const price = yield* owner.api.llmPricing.putLlmPrice({
        path: { model: longest },
        payload: { input_per_million_minor: 1, output_per_million_minor: 2 }
      })
      expect(price.model).toBe(longest)
      expect(yield* owner.api.llmUsage.listLlmUsage({ urlParams: { model: longest } })).toEqual({ events: [] })
      expectValidation(
        yield* call(base, "PUT", `/v1/llm-pricing/${encodeURIComponent(`${longest}x`)}`, {
          token: owner.jwt,
          body: { input_per_million_minor: 1, output_per_million_minor: 2 }
        }),
        "model"
      )
      expectValidation(
        yield* call(base, "GET", `/v1/llm-usage?model=${encodeURIComponent(`${longest}x`)}`, { token: owner.jwt }),
        "model"
      )
    })
  )
})
