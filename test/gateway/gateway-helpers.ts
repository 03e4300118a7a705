/** Helpers of the gateway suites: a connection and route to the stub, prices, budgets, usage events. */
import { expect } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import type { LlmUsageMessage } from "../../src/billing/Domain.js"
import type { GatewayRouteId, ProviderConnectionId } from "../../src/gateway/Domain.js"
import { queryDatabase } from "../support/Database.js"
import type { Caller } from "../support/Api.js"
import { eventually } from "../support/Eventually.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, TestDatabaseUrl } from "../support/TestServer.js"

export const PROVIDER_KEY = "sk-stub-provider-secret-0123456789"
export const ENCRYPTION_KEY = "gateway-test-encryption-key-0123456789abcdef"

/**
 * Settings of a gateway test server: the stub is on loopback. The upstream timeout is the default (minutes):
 * no test waits on it by accident under load; the one about it holds the stub's answer (model `slow`) instead.
 */
export const GATEWAY_SETTINGS = {
  HTTP_URL_ALLOWLIST: "127.0.0.1,localhost",
  GATEWAY_ENCRYPTION_KEY: ENCRYPTION_KEY
}

export interface Gateway {
  readonly connectionId: ProviderConnectionId
  readonly routeId: GatewayRouteId
  /** `${base}/v1/gateway/${routeId}` */
  readonly routeBase: string
}

/** Registers `agentId` with a profile that finds nothing (a route's agent must exist); kept when already there. */
export const registerAgent = (owner: Caller, agentId: string) =>
  owner.api.agents
    .createAgent({
      payload: new TextEncoder().encode(
        `agent_id: ${agentId}\ndisplay_name: ${agentId}\nauthority: {}\nscope: {}\ntone:\n  target: neutral\n`
      )
    })
    .pipe(
      Effect.asVoid,
      Effect.catchTag("Conflict", () => Effect.void)
    )

/** A connection to `upstreamUrl` and a route through it, created by `owner`. */
export const setupGateway = (base: string, owner: Caller, upstreamUrl: string, agentId = "support-bot") =>
  Effect.gen(function* () {
    yield* registerAgent(owner, agentId)
    const connection = yield* owner.api.providerConnections.createProviderConnection({
      payload: {
        display_name: "Stub",
        kind: "chat_compatible",
        provider_api_key: Redacted.make(PROVIDER_KEY),
        base_url: upstreamUrl
      }
    })
    const route = yield* owner.api.gatewayRoutes.createGatewayRoute({
      payload: { agent_id: agentId, display_name: "Stub route", provider_connection_id: connection.id }
    })
    return {
      connectionId: connection.id,
      routeId: route.id,
      routeBase: `${base}/v1/gateway/${route.id}`
    } satisfies Gateway
  })

export const setPrice = (owner: Caller, model: string, input: number, output: number) =>
  owner.api.llmPricing.putLlmPrice({
    path: { model },
    payload: { input_per_million_minor: input, output_per_million_minor: output }
  })

export const setBudget = (owner: Caller, capMinor: number | null, window: "day" | "month" = "month") =>
  owner.api.settings.updateSettings({
    payload: { config: { llm_budget: capMinor === null ? null : { cap_minor: capMinor, currency: "usd", window } } }
  })

/** An llm-usage message as published (the topic's value). */
export type UsageMessage = LlmUsageMessage

/** Every llm-usage message of the workspace published so far (database event log). */
export const usageMessages = (db: string, workspaceId: string) =>
  Effect.map(
    queryDatabase<{ value: string; key: string }>(
      db,
      `select key, value from event_log where topic = 'llm-usage' and key = $1 order by "offset"`,
      [workspaceId]
    ),
    (rows) => rows.map((row) => JSON.parse(row.value) as UsageMessage)
  )

/** Waits until the workspace has `count` usage messages; answers them. */
export const awaitUsage = (db: string, workspaceId: string, count: number) =>
  eventually(
    Effect.flatMap(usageMessages(db, workspaceId), (messages) =>
      messages.length >= count
        ? Effect.succeed(messages)
        : Effect.fail(new Error(`expected ${count} usage messages, found ${messages.length}`))
    ),
    "20 seconds"
  ).pipe(
    Effect.tap((messages) => Effect.sync(() => expect(messages).toHaveLength(count))),
    Effect.orDie
  )

/** The workspace's recorded spend in its month window, in USD nanos. */
export const monthSpend = (db: string, workspaceId: string) =>
  Effect.map(
    queryDatabase<{ spent: string; reserved: string }>(
      db,
      `select coalesce(sum(spent_usd_nanos), 0)::text as spent, coalesce(sum(reserved_usd_nanos), 0)::text as reserved
         from llm_budget_ledger where workspace_id = $1 and window_kind = 'month'`,
      [workspaceId]
    ),
    (rows) => ({ spent: BigInt(rows[0]!.spent), reserved: BigInt(rows[0]!.reserved) })
  )

/** A fresh tenant with a connection and route to `upstreamUrl`, and where to reach it all (server, database). */
export const gatewayTenant = (upstreamUrl: string) =>
  Effect.gen(function* () {
    const base = yield* baseUrl
    const db = yield* TestDatabaseUrl
    const owner = yield* tenant(base)
    const gateway = yield* setupGateway(base, owner, upstreamUrl)
    return { base, db, owner, gateway }
  })
