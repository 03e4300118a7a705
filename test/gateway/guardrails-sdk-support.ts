/**
 * Shared by the gateway guardrails suites (guardrails-sdk-requests.test.ts,
 * guardrails-sdk-streams.test.ts): a tenant with both official clients on a
 * route to the stub provider, and the shape of an SDK's API error.
 */
import Anthropic from "@anthropic-ai/sdk"
import { Effect } from "effect"
import OpenAI from "openai"
import { gatewayTenant } from "./gateway-helpers.js"

/** A tenant with a route to the stub (at `stubUrl`), and both clients on it (the owner's session). */
export const setUpClients = (stubUrl: string) =>
  Effect.gen(function* () {
    const tenant = yield* gatewayTenant(stubUrl)
    const { gateway, owner } = tenant
    const openai = new OpenAI({ apiKey: owner.jwt, baseURL: `${gateway.routeBase}/chat_style`, maxRetries: 0 })
    const anthropic = new Anthropic({
      apiKey: owner.jwt,
      baseURL: `${gateway.routeBase}/messages_style`,
      maxRetries: 0
    })
    return { ...tenant, openai, anthropic }
  })

/** An SDK's API error: its status, and the error body it parsed. */
export interface SdkError {
  readonly status: number
  readonly message: string
  readonly code?: string | null
  readonly error: Record<string, unknown>
}
