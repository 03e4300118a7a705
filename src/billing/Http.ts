/** Handlers of the billing groups: LLM pricing, LLM usage, budget alerts. */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect, Layer } from "effect"
import { GuardrailApi } from "../Api.js"
import { webhookUrlFor } from "../identity/Access.js"
import { CurrentCaller, inWorkspace } from "../identity/Authentication.js"
import { pageSize } from "../platform/Schemas.js"
import { BudgetAlerts } from "./BudgetAlerts.js"
import { Pricing } from "./Pricing.js"
import { LlmUsage } from "./UsageStore.js"

export const LlmPricingHttpLive = HttpApiBuilder.group(GuardrailApi, "llmPricing", (handlers) =>
  Effect.gen(function* () {
    const pricing = yield* Pricing
    // Writes are audited by the service.
    return handlers
      .handle("listLlmPrices", () => inWorkspace(pricing.list).pipe(Effect.map((prices) => ({ prices }))))
      .handle("putLlmPrice", ({ path, payload }) => inWorkspace((ws) => pricing.put(ws, path.model, payload)))
      .handle("deleteLlmPrice", ({ path }) => inWorkspace((ws) => pricing.remove(ws, path.model)))
  })
).pipe(Layer.provide(Pricing.Default))

export const LlmUsageHttpLive = HttpApiBuilder.group(GuardrailApi, "llmUsage", (handlers) =>
  Effect.gen(function* () {
    const usage = yield* LlmUsage
    return handlers.handle("listLlmUsage", ({ urlParams: { cursor, limit, ...query } }) =>
      inWorkspace((ws) => usage.list(ws, query, pageSize(limit, 200), cursor))
    )
  })
).pipe(Layer.provide(LlmUsage.Default))

export const BudgetAlertsHttpLive = HttpApiBuilder.group(GuardrailApi, "budgetAlerts", (handlers) =>
  Effect.gen(function* () {
    const alerts = yield* BudgetAlerts
    // Writes are audited by the service (in a transaction opened after the input's checks).
    return handlers
      .handle("listBudgetAlerts", () =>
        Effect.flatMap(CurrentCaller, (caller) =>
          Effect.map(alerts.list(caller.workspaceId), (configs) => ({
            configs: configs.map((config) => ({ ...config, webhook_url: webhookUrlFor(caller, config.webhook_url) }))
          }))
        )
      )
      .handle("createBudgetAlert", ({ payload }) => inWorkspace((ws) => alerts.create(ws, payload)))
      .handle("updateBudgetAlert", ({ path, payload }) => inWorkspace((ws) => alerts.update(ws, path.id, payload)))
      .handle("deleteBudgetAlert", ({ path }) => inWorkspace((ws) => alerts.remove(ws, path.id)))
      .handle("listBudgetAlertFirings", ({ path, urlParams }) =>
        inWorkspace((ws) => alerts.firings(ws, path.id, urlParams))
      )
      .handle("listBudgetAlertDeliveries", ({ path }) => inWorkspace((ws) => alerts.deliveries(ws, path.id)))
  })
).pipe(Layer.provide(BudgetAlerts.Default))
