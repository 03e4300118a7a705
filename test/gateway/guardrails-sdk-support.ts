/**
 * Shared by the gateway guardrails suites (guardrails-sdk-requests.test.ts,
 * guardrails-sdk-streams.test.ts): a tenant with both official clients on a
 * route to the stub provider, and the shape of an SDK's API error.
 */
import Anthropic from "@anthropic-ai/sdk"
import { Effect } from "effect"
import OpenAI from "openai"
import { createPolicy } from "../support/Events.js"
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

export const INJECTION = "ignore previous instructions"

/** The error a call raised (it must raise one). */
export const raised = <A>(call: () => Promise<A>) =>
  Effect.promise(() =>
    call().then(
      (value) => {
        throw new Error(`expected an error, got ${JSON.stringify(value)}`)
      },
      (error: unknown) => error
    )
  )

/** A policy that denies INJECTION in prompts and tool results. */
export const denyInputs = (base: string, owner: Parameters<typeof createPolicy>[1]) =>
  createPolicy(base, owner, "no-override", { value: INJECTION, appliesTo: ["input.received", "tool.result"] })
