/**
 * Helpers of the authorization and runs HTTP suites, over the contract's
 * typed client: an agent profile and policies as YAML, proposing events for
 * a tenant (`POST /v1/events`), runs and their events, paging, and reading
 * the raw JSON of an answer where a test checks its exact keys.
 *
 * The helpers take `(base, owner)`: `owner.api` when the owner has a client
 * (test/support/Tenants.ts), else a client signed in with `owner.jwt`.
 */
import { expect } from "@effect/vitest"
import { Duration, Effect, Schema } from "effect"
import type { AuthorizationResponse, ProposedEvent } from "../../src/authorization/Domain.js"
import { PolicyId, type UpsertToolMetadata } from "../../src/catalog/Domain.js"
import { type CreateRun, CreateRunEvent, RunId } from "../../src/runs/Domain.js"
import { clientAt, type GuardrailClient, keysOf, withRaw } from "../support/Api.js"

export const YAML = "application/yaml"

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

/** `POST /v1/agents` (201). */
export const createAgent = (base: string, owner: Owner, agentId: string, yaml = agentYaml(agentId)) =>
  Effect.flatMap(apiOf(base, owner), (api) => api.agents.createAgent({ payload: yamlBytes(yaml) }))

/** `POST /v1/policies` (201). */
export const createPolicy = (base: string, owner: Owner, id: string, options: PolicyOptions) =>
  Effect.flatMap(apiOf(base, owner), (api) =>
    api.policies.createPolicy({ payload: yamlBytes(policyDocument(id, options)) })
  )

/** `PATCH /v1/policies/{id}/enabled` (200). */
export const setPolicyEnabled = (base: string, owner: Owner, id: string, enabled: boolean) =>
  Effect.flatMap(apiOf(base, owner), (api) =>
    api.policies.setPolicyEnabled({ path: { id: PolicyId.make(id) }, payload: { enabled } })
  )

/** `POST /v1/tool-metadata` (200). */
export const upsertTool = (base: string, owner: Owner, metadata: typeof UpsertToolMetadata.Type) =>
  Effect.flatMap(apiOf(base, owner), (api) => api.toolMetadata.upsertToolMetadata({ payload: metadata }))

// ---- proposed events

export interface Action {
  readonly operation: string
  readonly content?: string
  readonly params?: Record<string, unknown>
  readonly sources?: ReadonlyArray<{ path: string; origin: string; source_id: string }>
}

export interface EventExtras {
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

/** The event body for `tenant` and `agentId` (principal from the tenant's workspace and default environment). */
export const eventBody = (
  tenant: EventTenant,
  agentId: string,
  action: Action,
  extras: EventExtras = {}
): typeof ProposedEvent.Type => {
  const { agent_id, environment_id, workspace_id, token: _token, ...rest } = extras
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

/** The client proposing for `tenant`: `token`'s (e.g. a runtime key) when given, else the tenant's. */
const proposer = (base: string, tenant: Owner, token: string | undefined) =>
  token === undefined ? apiOf(base, tenant) : clientAt(base, { token })

/** `POST /v1/events` as a typed call, unchecked (for the answers that must fail). */
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

export const reply = (content: string): Action => ({ operation: "reply", content })

/** The requirement ids (or policy ids) of a decision's findings. */
export const reasonsOf = (decision: Decision) =>
  decision.findings.map((finding) => finding.policy_id ?? finding.requirement_id)

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

// ---- runs, traces and reviews

export const RUN_KEYS = [
  "agent_id",
  "blocked_count",
  "created_at",
  "ended_at",
  "environment",
  "environment_id",
  "escalated_count",
  "external_id",
  "id",
  "kind",
  "metadata",
  "p95_latency_ms",
  "rewritten_count",
  "started_at",
  "status",
  "trace_count",
  "updated_at",
  "workspace_id"
]

export const TRACE_KEYS = [
  "created_at",
  "decision",
  "domain",
  "elapsed_ms",
  "environment",
  "environment_id",
  "latest_review_outcome",
  "latest_reviewed_at",
  "payload",
  "run_event_id",
  "run_id",
  "session_id",
  "trace_id"
]

/** `POST /v1/runs` (201). */
export const createRun = (base: string, owner: Owner, body: typeof CreateRun.Type) =>
  Effect.flatMap(apiOf(base, owner), (api) => api.runs.createRun({ payload: body }))

/** `GET /v1/runs/{id}` (200). */
export const getRun = (base: string, owner: Owner, id: string) =>
  Effect.flatMap(apiOf(base, owner), (api) => api.runs.getRun({ path: { id: RunId.make(id) } }))

/** A run event to append; its `kind` is checked against the contract's kinds before it is sent. */
export type RunEventInput = Omit<typeof CreateRunEvent.Type, "kind"> & { readonly kind: string }

/** `POST /v1/runs/{id}/events` (201). */
export const appendEvent = (base: string, owner: Owner, runId: string, body: RunEventInput) =>
  Effect.gen(function* () {
    const api = yield* apiOf(base, owner)
    const payload = yield* Schema.decodeUnknown(CreateRunEvent)(body)
    return yield* api.runs.appendRunEvent({ path: { id: RunId.make(runId) }, payload })
  })

/** The cursor of the next page, as URL parameters to spread (none on the first page). */
export type CursorParams = { readonly cursor?: string }

/**
 * Follows `next_cursor` from the first page to the last of a list whose items are under `key`;
 * answers every page.
 */
export const allPages = <K extends string, A, E, R>(
  key: K,
  page: (
    cursor: CursorParams
  ) => Effect.Effect<{ readonly [P in K]: ReadonlyArray<A> } & { readonly next_cursor?: string | undefined }, E, R>,
  maxPages = 200
) =>
  Effect.gen(function* () {
    const pages: Array<ReadonlyArray<A>> = []
    let cursor: CursorParams = {}
    for (let i = 0; i < maxPages; i++) {
      const answer = yield* page(cursor)
      pages.push(answer[key])
      if (answer.next_cursor === undefined) return pages
      expect(typeof answer.next_cursor).toBe("string")
      cursor = { cursor: answer.next_cursor }
    }
    throw new Error(`more than ${maxPages} pages`)
  })

/** A base64url cursor holding `text`: how the service's own cursors are encoded, forged. */
export const forgedCursor = (text: string) => Buffer.from(text).toString("base64url")
