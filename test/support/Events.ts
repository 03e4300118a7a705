/**
 * Traffic over the contract's typed client, for every suite that needs
 * decisions: an agent profile and policies as YAML, proposed events for a
 * tenant (`POST /v1/events`) and the checks every decision passes, and the
 * runs events belong to.
 *
 * The helpers take `(base, owner)`: `owner.api` when the owner has a client
 * (test/support/Tenants.ts), else a client signed in with `owner.jwt`.
 */
import { expect } from "@effect/vitest"
import { Effect } from "effect"
import type { AuthorizationResponse, ProposedAction, ProposedEvent } from "../../src/authorization/Domain.js"
import type { CreateRun } from "../../src/runs/Domain.js"
import { clientAt, type GuardrailClient, keysOf, withRaw } from "./Api.js"

/** Who calls: a session, and the client acting for it when there is one. */
export interface Owner {
  readonly jwt: string
  readonly api?: GuardrailClient
}

/** An owner with the ids of its workspace and default environment (a `Tenant`). */
export interface EventTenant extends Owner {
  readonly workspaceId: string
  readonly defaultEnvironmentId: string
}

/** The owner's client: its own, else one signed in with its session. */
export const apiOf = (base: string, owner: Owner): Effect.Effect<GuardrailClient> =>
  owner.api === undefined ? clientAt(base, { token: owner.jwt }) : Effect.succeed(owner.api)

/** A YAML (or JSON) document as the bytes the catalog's document endpoints take. */
export const yamlBytes = (text: string) => new TextEncoder().encode(text)

// ---- documents

/** A profile with one phrase of each kind the profile checker reads ("a full refund" is a promise it cannot make). */
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
  /** Event kinds the policy screens (`applies_to`); unset: the default (output.proposed). */
  readonly appliesTo?: ReadonlyArray<string>
  readonly mode?: "observe" | "enforce"
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
    ...(options.appliesTo === undefined ? [] : [`applies_to: ${JSON.stringify(options.appliesTo)}`]),
    ...(options.mode === undefined ? [] : [`mode: ${options.mode}`]),
    "match:",
    `  type: ${options.type ?? "literal"}`,
    `  value: ${JSON.stringify(options.value)}`,
    `  target: ${options.target ?? "content"}`,
    ...(options.action === "rewrite" ? [`rewrite: ${JSON.stringify(options.rewrite ?? "[removed]")}`] : [])
  ].join("\n") + "\n"

/** `POST /v1/agents` (201): the agent `agentId`, by default with `agentYaml`. */
export const createAgent = (base: string, owner: Owner, agentId: string, yaml = agentYaml(agentId)) =>
  Effect.flatMap(apiOf(base, owner), (api) => api.agents.createAgent({ payload: yamlBytes(yaml) }))

/** `POST /v1/policies` (201): the policy `id` (see `policyDocument`). */
export const createPolicy = (base: string, owner: Owner, id: string, options: PolicyOptions) =>
  Effect.flatMap(apiOf(base, owner), (api) =>
    api.policies.createPolicy({ payload: yamlBytes(policyDocument(id, options)) })
  )

// ---- proposed events

export type Action = typeof ProposedAction.Type

export interface EventExtras {
  /** Default `output.proposed`. */
  readonly kind?: typeof ProposedEvent.Type.kind
  readonly run_id?: string
  readonly run_event_id?: string
  readonly session_id?: string
  readonly metadata?: unknown
  readonly agent_id?: string
  readonly environment_id?: string
  readonly workspace_id?: string
  /** Bearer credential instead of the tenant's session (e.g. a runtime key). */
  readonly token?: string
}

/** A decision as the client decodes it. */
export type Decision = AuthorizationResponse

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

export const reply = (content: string): Action => ({ operation: "reply", content })

/** The event body for `tenant` and `agentId` (principal from the tenant's workspace and default environment). */
export const eventBody = (
  tenant: Pick<EventTenant, "workspaceId" | "defaultEnvironmentId">,
  agentId: string,
  action: Action,
  extras: EventExtras = {}
): typeof ProposedEvent.Type => {
  const { agent_id, environment_id, workspace_id, token: _token, kind, ...rest } = extras
  return {
    kind: kind ?? "output.proposed",
    principal: {
      agent_id: agent_id ?? agentId,
      environment_id: environment_id ?? tenant.defaultEnvironmentId,
      workspace_id: workspace_id ?? tenant.workspaceId
    },
    action,
    ...rest
  }
}

/** The client proposing for `tenant`: `token`'s (e.g. a runtime key) when given, else the tenant's. */
const proposer = (base: string, tenant: Owner, token: string | undefined) =>
  token === undefined ? apiOf(base, tenant) : clientAt(base, { token })

/** `POST /v1/events` as a typed call, unchecked (for the answers that must fail, or a decision taken as it comes). */
export const proposeCall = (
  base: string,
  tenant: EventTenant,
  agentId: string,
  action: Action,
  extras: EventExtras = {}
) =>
  Effect.flatMap(proposer(base, tenant, extras.token), (api) =>
    api.events.authorizeEvent({ payload: eventBody(tenant, agentId, action, extras) })
  )

/** Checks the invariants every decision carries; `body` is the decision's JSON as sent. */
export const expectDecisionShape = (decision: Decision, body: unknown) => {
  const text = JSON.stringify(body)
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
export const propose = (base: string, tenant: EventTenant, agentId: string, action: Action, extras: EventExtras = {}) =>
  Effect.gen(function* () {
    const api = yield* proposer(base, tenant, extras.token)
    const { body, value: decision } = yield* withRaw(
      api.events.authorizeEvent({ payload: eventBody(tenant, agentId, action, extras), withResponse: true })
    )
    expectDecisionShape(decision, body)
    return decision
  })

// ---- runs

/** `POST /v1/runs` (201). */
export const createRun = (base: string, owner: Owner, body: typeof CreateRun.Type) =>
  Effect.flatMap(apiOf(base, owner), (api) => api.runs.createRun({ payload: body }))
