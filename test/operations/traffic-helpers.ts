/**
 * Traffic for the catalog, analytics and operations suites, through the
 * contract's typed client: the agent profile and policy documents the
 * authorization suites use, decisions on proposed events (`POST /v1/events`)
 * checked for the invariants every decision carries, and polling until a
 * check passes.
 */
import { expect } from "@effect/vitest"
import { Duration, Effect } from "effect"
import type { AuthorizationResponse, ProposedAction, ProposedEvent } from "../../src/authorization/Domain.js"
import { type Caller, document } from "../catalog/catalog-helpers.js"
import { keysOf, withRaw } from "../support/Api.js"

// ---- documents

/** A profile with one phrase of each kind the profile checker reads. */
export const agentYaml = (agentId: string) => `agent_id: ${agentId}
display_name: Support Bot
system_prompt: You help customers with orders.
authority:
  can_promise: [a callback within one business day]
  cannot_promise: [a full refund]
scope:
  in_scope: [orders, shipping]
  out_of_scope: [legal advice]
tone:
  target: friendly
  forbidden: [stupid]
escalation_triggers: [lawyer]
`

export interface PolicyOptions {
  readonly action?: "permit" | "deny" | "defer" | "rewrite"
  readonly type?: "literal" | "regex" | "any_of"
  readonly value: string
  readonly target?: string
  readonly owner?: string
  readonly enabled?: boolean
  readonly rewrite?: string
  readonly severity?: "low" | "medium" | "high" | "critical"
  readonly family?: string
  readonly description?: string
}

/** A policy document as YAML (values are JSON-quoted, so any text is safe). */
export const policyDocument = (id: string, options: PolicyOptions) =>
  [
    `id: ${id}`,
    `description: ${JSON.stringify(options.description ?? `policy ${id}`)}`,
    `family: ${options.family ?? "content"}`,
    `severity: ${options.severity ?? "high"}`,
    `action: ${options.action ?? "deny"}`,
    ...(options.enabled === undefined ? [] : [`enabled: ${options.enabled}`]),
    ...(options.owner === undefined ? [] : [`owner_agent_id: ${options.owner}`]),
    "match:",
    `  type: ${options.type ?? "literal"}`,
    `  value: ${JSON.stringify(options.value)}`,
    `  target: ${options.target ?? "content"}`,
    ...(options.action === "rewrite" ? [`rewrite: ${JSON.stringify(options.rewrite ?? "[removed]")}`] : [])
  ].join("\n") + "\n"

/** Registers the agent `agentId` (by default with `agentYaml`). */
export const createAgent = (owner: Caller, agentId: string, yaml = agentYaml(agentId)) =>
  owner.api.agents.createAgent({ payload: document(yaml) })

/** Creates the policy `id` (see `policyDocument`). */
export const createPolicy = (owner: Caller, id: string, options: PolicyOptions) =>
  owner.api.policies.createPolicy({ payload: document(policyDocument(id, options)) })

// ---- proposed events

export type Action = typeof ProposedAction.Type

export interface EventExtras {
  readonly run_id?: string
  readonly run_event_id?: string
  readonly session_id?: string
  readonly metadata?: unknown
  readonly agent_id?: string
  readonly environment_id?: string
  readonly workspace_id?: string
}

/** Who proposes: a tenant's client and the ids of its workspace and default environment. */
export interface Proposer extends Caller {
  readonly workspaceId: string
  readonly defaultEnvironmentId: string
}

/** The event body for `tenant` and `agentId` (principal from the tenant's workspace and default environment). */
export const eventBody = (
  tenant: Pick<Proposer, "workspaceId" | "defaultEnvironmentId">,
  agentId: string,
  action: Action,
  extras: EventExtras = {}
): typeof ProposedEvent.Type => {
  const { agent_id, environment_id, workspace_id, ...rest } = extras
  return {
    kind: "output.proposed",
    principal: {
      agent_id: agent_id ?? agentId,
      environment_id: environment_id ?? tenant.defaultEnvironmentId,
      workspace_id: workspace_id ?? tenant.workspaceId
    },
    action,
    ...rest
  }
}

export const DECISION_KEYS = [
  "applied_grant",
  "approval",
  "domain",
  "effect",
  "findings",
  "intent_id",
  "latency_ms",
  "lease",
  "reason",
  "receipt_id",
  "status",
  "trace_id",
  "transformed_value"
]

/** Checks the invariants every decision carries (`text`: the body as sent). */
export const expectDecisionShape = (decision: AuthorizationResponse, body: unknown, text: string) => {
  expect(keysOf(body), text).toEqual(DECISION_KEYS)
  expect(["permit", "deny", "defer", "rewrite"], text).toContain(decision.effect)
  expect(decision.intent_id, text).toMatch(/^\S+$/)
  expect(decision.receipt_id, text).toMatch(/^\S+$/)
  expect(decision.trace_id, text).toMatch(/^\S+$/)
  expect(Number.isInteger(decision.latency_ms) && decision.latency_ms >= 0, text).toBe(true)
  expect(Array.isArray(decision.findings), text).toBe(true)
  if (decision.effect !== "rewrite") expect(decision.transformed_value, text).toBeNull()
}

/** `POST /v1/events` that must answer 200 with a well-formed decision. */
export const propose = (tenant: Proposer, agentId: string, action: Action, extras: EventExtras = {}) =>
  Effect.map(
    withRaw(
      tenant.api.events.authorizeEvent({ payload: eventBody(tenant, agentId, action, extras), withResponse: true })
    ),
    ({ value, body, text }) => {
      expectDecisionShape(value, body, text)
      return value
    }
  )

export const reply = (content: string): Action => ({ operation: "reply", content })

/** Retries `check` (an Effect that throws through `expect`) every 100 ms until it passes or `timeout` passes. */
export const until = <A, E, R>(check: Effect.Effect<A, E, R>, timeout: Duration.DurationInput = "10 seconds") =>
  Effect.gen(function* () {
    const deadline = Date.now() + Duration.toMillis(Duration.decode(timeout))
    for (;;) {
      const exit = yield* Effect.exit(check)
      if (exit._tag === "Success" || Date.now() > deadline) return yield* exit
      yield* Effect.sleep("100 millis")
    }
  })
