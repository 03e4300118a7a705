/**
 * Helpers of the billing suites: LLM usage produced the way the gateway
 * produces it (an `llm-usage` message through the transactional outbox),
 * budget alert calls, and a loopback webhook receiver that verifies
 * Standard Webhooks signatures on its own (no code of the service). API
 * calls go through the typed client.
 */
import { expect } from "@effect/vitest"
import { Effect } from "effect"
import { createHmac, randomUUID, timingSafeEqual } from "node:crypto"
import { createServer, type IncomingHttpHeaders } from "node:http"
import type { AddressInfo } from "node:net"
import { Outbox } from "../../src/platform/Outbox.js"
import { Topics } from "../../src/platform/Topics.js"
import type { BudgetAlertId, CreateBudgetAlert, LlmUsageMessage, LlmUsageResponse } from "../../src/billing/Domain.js"
import type { UpdateSettings } from "../../src/identity/Domain.js"
import type { GuardrailClient } from "../support/Api.js"
import { until } from "../support/Eventually.js"

/**
 * Settings of a server whose webhooks go to loopback receivers: retries 100 ms apart at first, and an attempt
 * timeout a hanging receiver's attempt outlasts anything a test waits for, however loaded the machine.
 */
export const WEBHOOK_SETTINGS = {
  HTTP_URL_ALLOWLIST: "127.0.0.1",
  WEBHOOK_RETRY_BASE_MS: "100",
  WEBHOOK_ATTEMPT_TIMEOUT_MS: "50000"
}

export interface UsageInput {
  readonly workspaceId: string
  readonly effectiveAt: string
  readonly principalId?: string | null
  readonly model?: string
  readonly kind?: "customer_inference" | "guardrail"
  readonly promptTokens?: number
  readonly completionTokens?: number
  readonly costMinor?: number
  readonly costUsdNanos?: string
  readonly id?: string
}

export const usageMessage = (input: UsageInput): LlmUsageMessage => ({
  schema_version: 1,
  id: input.id ?? `llu_${randomUUID().replaceAll("-", "")}`,
  workspace_id: input.workspaceId,
  api_key_id: null,
  principal_id: input.principalId === undefined ? "key_alpha" : input.principalId,
  request_id: `req_${randomUUID()}`,
  kind: input.kind ?? "customer_inference",
  model: input.model ?? "gpt-4o-mini",
  prompt_tokens: input.promptTokens ?? 100,
  completion_tokens: input.completionTokens ?? 50,
  currency: "usd",
  cost_minor: input.costMinor ?? 10,
  cost_usd_nanos: input.costUsdNanos ?? String((input.costMinor ?? 10) * 10_000_000),
  effective_at: input.effectiveAt,
  metadata: { test: true },
  unpriced: false,
  agent_id: "support-bot"
})

/** Publishes usage as the gateway does: one llm-usage message per call, through the outbox. */
export const publishUsage = (messages: ReadonlyArray<LlmUsageMessage>, eventIds?: ReadonlyArray<string>) =>
  Effect.flatMap(Outbox, (outbox) =>
    outbox.enqueue(
      messages.map((value, index) => ({
        topic: Topics.llmUsage,
        key: value.workspace_id,
        value,
        ...(eventIds?.[index] === undefined ? {} : { eventId: eventIds[index] })
      }))
    )
  )

export type CreateAlertPayload = typeof CreateBudgetAlert.Type

/** Creates a budget alert config; answers it with its webhook secret (shown this once). */
export const createAlert = (api: GuardrailClient, payload: CreateAlertPayload) =>
  api.budgetAlerts.createBudgetAlert({ payload })

/** A budget alert that fires on the first cent of a UTC day, delivered to `webhookUrl`. */
export const firstCentAlert = (api: GuardrailClient, name: string, webhookUrl: string) =>
  createAlert(api, { name, threshold_type: "absolute", threshold_value: 1, window: "day", webhook_url: webhookUrl })

/** Waits until `receiver` has had at least `count` requests. */
export const untilReceived = (receiver: { readonly received: ReadonlyArray<ReceivedWebhook> }, count: number) =>
  until(
    Effect.sync(() => expect(receiver.received.length).toBeGreaterThanOrEqual(count)),
    "30 seconds"
  )

/** The firings of one budget alert config. */
export const firingsOf = (api: GuardrailClient, id: BudgetAlertId) =>
  Effect.map(api.budgetAlerts.listBudgetAlertFirings({ path: { id }, urlParams: {} }), (answer) => answer.firings)

/** The webhook deliveries of one budget alert config, each with its attempts. */
export const deliveriesOf = (api: GuardrailClient, id: BudgetAlertId) =>
  Effect.map(api.budgetAlerts.listBudgetAlertDeliveries({ path: { id } }), (answer) => answer.deliveries)

/** Merges `config` into the workspace settings' config. */
export const patchSettings = (api: GuardrailClient, config: NonNullable<(typeof UpdateSettings.Type)["config"]>) =>
  api.settings.updateSettings({ payload: { config } })

/** Usage records of a raw (ungrouped) `GET /v1/llm-usage` answer; a grouped answer fails the test. */
export const usageRecordsOf = (answer: typeof LlmUsageResponse.Type) => {
  if (!("events" in answer)) return expect.fail(`expected usage records, got groups: ${JSON.stringify(answer)}`)
  return answer
}

/** Groups of a `GET /v1/llm-usage?group_by=...` answer; an ungrouped answer fails the test. */
export const usageGroupsOf = (answer: typeof LlmUsageResponse.Type) => {
  if (!("groups" in answer)) return expect.fail(`expected groups, got usage records: ${JSON.stringify(answer)}`)
  return answer
}

/** The ids of the workspace's usage records (newest 100). */
export const usageIds = (api: GuardrailClient) =>
  Effect.map(api.llmUsage.listLlmUsage({ urlParams: { limit: 100 } }), (answer) =>
    usageRecordsOf(answer).events.map((event) => event.id)
  )

// ---- the webhook receiver

export interface ReceivedWebhook {
  readonly headers: IncomingHttpHeaders
  readonly body: string
  readonly answeredWith: number
}

/** Standard Webhooks verification, written from the spec: HMAC-SHA256 over "id.timestamp.body". */
export const verifyStandardWebhook = (secret: string, headers: IncomingHttpHeaders, body: string): boolean => {
  const id = headers["webhook-id"]
  const timestamp = headers["webhook-timestamp"]
  const signatures = headers["webhook-signature"]
  if (typeof id !== "string" || typeof timestamp !== "string" || typeof signatures !== "string") return false
  if (!/^\d+$/.test(timestamp) || Math.abs(Date.now() / 1000 - Number(timestamp)) > 300) return false
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64")
  const expected = createHmac("sha256", key).update(`${id}.${timestamp}.${body}`).digest()
  return signatures.split(" ").some((entry) => {
    const [version, signature] = entry.split(",")
    if (version !== "v1" || signature === undefined) return false
    const given = Buffer.from(signature, "base64")
    return given.length === expected.length && timingSafeEqual(given, expected)
  })
}

/**
 * A loopback HTTP receiver for the life of the scope. `statusFor(n)` is the
 * status it answers to the n-th request (1-based) of one `webhook-id`; 0
 * leaves the request hanging.
 */
export const webhookReceiver = (statusFor: (attemptOfThisId: number) => number) =>
  Effect.acquireRelease(
    Effect.promise(
      () =>
        new Promise<{ url: string; received: Array<ReceivedWebhook>; close: () => Promise<void> }>((resolve) => {
          const received: Array<ReceivedWebhook> = []
          const server = createServer((request, response) => {
            const chunks: Array<Buffer> = []
            request.on("data", (chunk: Buffer) => chunks.push(chunk))
            request.on("end", () => {
              const id = request.headers["webhook-id"]
              const status = statusFor(received.filter((entry) => entry.headers["webhook-id"] === id).length + 1)
              received.push({
                headers: request.headers,
                body: Buffer.concat(chunks).toString("utf8"),
                answeredWith: status
              })
              // 0: never answer (a hanging receiver).
              if (status !== 0) {
                response.writeHead(status, { "content-type": "text/plain" }).end(status < 300 ? "ok" : "try later")
              }
            })
          })
          server.listen(0, "127.0.0.1", () => {
            const { port } = server.address() as AddressInfo
            resolve({
              url: `http://127.0.0.1:${port}/hooks/budget`,
              received,
              close: () =>
                new Promise((done) => {
                  server.close(() => done())
                  server.closeAllConnections()
                })
            })
          })
        })
    ),
    (receiver) => Effect.promise(() => receiver.close())
  )

/** Asserts the exact set of firing window starts. */
export const expectWindows = (
  firings: ReadonlyArray<{ readonly window_start: string }>,
  windows: ReadonlyArray<string>
) => expect(firings.map((firing) => firing.window_start).sort()).toEqual([...windows].sort())
