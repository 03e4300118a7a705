/** Stub handlers of the billing groups; each answers 501 until implemented. */
import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { GuardrailApi } from "../Api.js"
import { notImplemented } from "../platform/Errors.js"

const stub = (what: string) => () => Effect.fail(notImplemented(what))

export const LlmPricingHttpLive = HttpApiBuilder.group(GuardrailApi, "llmPricing", (handlers) =>
  handlers
    .handle("listLlmPrices", stub("GET /v1/llm-pricing"))
    .handle("putLlmPrice", stub("PUT /v1/llm-pricing/{model}"))
    .handle("deleteLlmPrice", stub("DELETE /v1/llm-pricing/{model}"))
)

export const LlmUsageHttpLive = HttpApiBuilder.group(GuardrailApi, "llmUsage", (handlers) =>
  handlers.handle("listLlmUsage", stub("GET /v1/llm-usage"))
)

export const BudgetAlertsHttpLive = HttpApiBuilder.group(GuardrailApi, "budgetAlerts", (handlers) =>
  handlers
    .handle("listBudgetAlerts", stub("GET /v1/financial/budget-alerts"))
    .handle("createBudgetAlert", stub("POST /v1/financial/budget-alerts"))
    .handle("updateBudgetAlert", stub("PATCH /v1/financial/budget-alerts/{id}"))
    .handle("deleteBudgetAlert", stub("DELETE /v1/financial/budget-alerts/{id}"))
    .handle("listBudgetAlertFirings", stub("GET /v1/financial/budget-alerts/{id}/firings"))
)
