/** The billing contract: LLM pricing, LLM usage, and budget alerts with their firings. */
import { ReportQuery } from "../http/Routes.js"
import { Authentication } from "../identity/Authentication.js"
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as OpenApi from "@effect/platform/OpenApi"
import { Schema } from "effect"
import { CursorParam, LimitParam } from "../platform/Schemas.js"
import { MAX_FIRINGS_PAGE } from "./BudgetAlerts.js"
import {
  BudgetAlertConfig,
  BudgetAlertFiring,
  BudgetAlertId,
  CreateBudgetAlert,
  CreatedBudgetAlert,
  LlmPrice,
  LlmUsageParams,
  ModelName,
  LlmUsageResponse,
  PutLlmPrice,
  UpdateBudgetAlert,
  WebhookDelivery
} from "./Domain.js"

const ModelPath = Schema.Struct({ model: ModelName })

export class LlmPricingApi extends HttpApiGroup.make("llmPricing")
  .add(
    HttpApiEndpoint.get("listLlmPrices", "/llm-pricing").addSuccess(Schema.Struct({ prices: Schema.Array(LlmPrice) }))
  )
  .add(
    HttpApiEndpoint.put("putLlmPrice", "/llm-pricing/:model")
      .setPath(ModelPath)
      .setPayload(PutLlmPrice)
      .addSuccess(LlmPrice)
  )
  .add(
    HttpApiEndpoint.del("deleteLlmPrice", "/llm-pricing/:model").setPath(ModelPath).addSuccess(HttpApiSchema.NoContent)
  )
  .prefix("/v1")
  .middleware(Authentication)
  .annotate(
    OpenApi.Description,
    "Per-model LLM prices of the workspace; the model name is normalized to trimmed lowercase."
  ) {}

export class LlmUsageApi extends HttpApiGroup.make("llmUsage")
  .add(
    HttpApiEndpoint.get("listLlmUsage", "/llm-usage")
      .setUrlParams(
        Schema.Struct({
          ...LlmUsageParams.fields,
          limit: Schema.optional(LimitParam()),
          cursor: Schema.optional(CursorParam)
        })
      )
      .addSuccess(LlmUsageResponse)
      .annotate(ReportQuery, true)
  )
  .prefix("/v1")
  .middleware(Authentication)
  .annotate(
    OpenApi.Description,
    "LLM usage records (customer inference and guardrail judges), raw or grouped by day, principal, agent or model."
  ) {}

const AlertPath = Schema.Struct({ id: BudgetAlertId })

export class BudgetAlertsApi extends HttpApiGroup.make("budgetAlerts")
  .add(
    HttpApiEndpoint.get("listBudgetAlerts", "/financial/budget-alerts").addSuccess(
      Schema.Struct({ configs: Schema.Array(BudgetAlertConfig) })
    )
  )
  .add(
    HttpApiEndpoint.post("createBudgetAlert", "/financial/budget-alerts")
      .setPayload(CreateBudgetAlert)
      .addSuccess(CreatedBudgetAlert, { status: 201 })
  )
  .add(
    HttpApiEndpoint.patch("updateBudgetAlert", "/financial/budget-alerts/:id")
      .setPath(AlertPath)
      .setPayload(UpdateBudgetAlert)
      .addSuccess(BudgetAlertConfig)
  )
  .add(
    HttpApiEndpoint.del("deleteBudgetAlert", "/financial/budget-alerts/:id")
      .setPath(AlertPath)
      .addSuccess(HttpApiSchema.NoContent)
  )
  .add(
    HttpApiEndpoint.get("listBudgetAlertFirings", "/financial/budget-alerts/:id/firings")
      .setPath(AlertPath)
      .setUrlParams(Schema.Struct({ limit: Schema.optional(LimitParam()), cursor: Schema.optional(CursorParam) }))
      .addSuccess(
        Schema.Struct({ firings: Schema.Array(BudgetAlertFiring), next_cursor: Schema.optional(Schema.String) })
      )
      .annotate(
        OpenApi.Description,
        `Newest first, ${MAX_FIRINGS_PAGE} a page at most (default 50); next_cursor (extension) pages further.`
      )
  )
  .add(
    HttpApiEndpoint.get("listBudgetAlertDeliveries", "/financial/budget-alerts/:id/deliveries")
      .setPath(AlertPath)
      .addSuccess(Schema.Struct({ deliveries: Schema.Array(WebhookDelivery) }))
      .annotate(
        OpenApi.Description,
        "Extension: the config's signed webhook deliveries (newest 100), each with every attempt."
      )
  )
  .prefix("/v1")
  .middleware(Authentication)
  .annotate(
    OpenApi.Description,
    "Budget alerts on LLM spend or action count; each fires at most once per window and threshold amount (a changed threshold is armed again), optionally to a signed webhook."
  ) {}
