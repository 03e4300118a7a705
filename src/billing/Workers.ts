/** The billing domain's stream-worker layers, each with the services it uses. */
import { Layer } from "effect"
import { WorkspaceSettings } from "../identity/WorkspaceSettings.js"
import { OutboundGuard } from "../platform/OutboundGuard.js"
import { AlertsRepo } from "./AlertsRepo.js"
import { ActionMeterLive, BudgetMeters } from "./BudgetMeters.js"
import { DeliveryRepo } from "./DeliveryRepo.js"
import { UsageRepo } from "./UsageRepo.js"
import { UsageStoreLive } from "./UsageStore.js"
import { WebhookDeliveryLive } from "./WebhookDelivery.js"

const MetersLive = BudgetMeters.Default.pipe(Layer.provide(WorkspaceSettings.Default))

/** Stores llm-usage records once and meters their spend (`llm_spend`). */
export const LlmUsageWorkerLive = UsageStoreLive.pipe(Layer.provide(Layer.merge(MetersLive, UsageRepo.Default)))

/** Counts authorization decisions (`actions`). */
export const ActionMeterWorkerLive = ActionMeterLive.pipe(Layer.provide(MetersLive))

/** Turns firings into signed webhook deliveries and delivers them with retries. */
export const BudgetWebhooksWorkerLive = WebhookDeliveryLive.pipe(
  Layer.provide(Layer.mergeAll(AlertsRepo.Default, DeliveryRepo.Default, OutboundGuard.Default))
)
