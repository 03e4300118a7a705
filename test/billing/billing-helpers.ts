/**
 * Helpers of the billing suites: LLM usage produced the way the gateway
 * produces it (an `llm-usage` message through the transactional outbox),
 * budget alert calls, and a loopback webhook receiver that verifies
 * Standard Webhooks signatures on its own (no code of the service).
 */
import { expect } from "@effect/vitest"
import { Effect } from "effect"
import { createHmac, randomUUID, timingSafeEqual } from "node:crypto"
import { createServer, type IncomingHttpHeaders } from "node:http"
import type { AddressInfo } from "node:net"
import type { LlmUsageMessage } from "../../src/billing/Domain.js"
import { Outbox } from "../../src/platform/Outbox.js"
import { Topics } from "../../src/platform/Topics.js"
import { call, expectStatus } from "../identity/http-helpers.js"

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

export interface AlertBody {
  readonly id: string
  readonly name: string
  readonly meter: string
  readonly threshold_type: string
  readonly threshold_value: number
  readonly window: string
  readonly enabled: boolean
  readonly principal_id: string | null
  readonly webhook_url: string | null
  readonly workspace_id: string
  readonly created_at: string
  readonly updated_at: string
  readonly webhook_secret?: string
}

export interface FiringBody {
  readonly id: string
  readonly config_id: string
  readonly meter: string
  readonly currency: string
  readonly cap_minor: number
  readonly spent_minor: number
  readonly window_start: string
  readonly fired_at: string
  readonly principal_id: string | null
  readonly payload: Record<string, unknown>
}

export const createAlert = (base: string, token: string, body: Record<string, unknown>) =>
  Effect.map(
    call(base, "POST", "/v1/financial/budget-alerts", { token, body }),
    (response) => expectStatus(response, 201) as AlertBody & { webhook_secret: string }
  )

export const firingsOf = (base: string, token: string, id: string) =>
  Effect.map(
    call(base, "GET", `/v1/financial/budget-alerts/${id}/firings`, { token }),
    (response) => (expectStatus(response, 200) as { firings: Array<FiringBody> }).firings
  )

export const patchSettings = (base: string, token: string, config: Record<string, unknown>) =>
  Effect.map(call(base, "PATCH", "/v1/settings", { token, body: { config } }), (response) =>
    expectStatus(response, 200)
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
export const expectWindows = (firings: ReadonlyArray<FiringBody>, windows: ReadonlyArray<string>) =>
  expect(firings.map((firing) => firing.window_start).sort()).toEqual([...windows].sort())
