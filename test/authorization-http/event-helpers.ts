/**
 * Helpers of the authorization and runs HTTP suites: an agent profile and
 * policies as YAML, proposing events for a tenant (`POST /v1/events`), and
 * the response shapes of decisions, runs, run events, traces and reviews.
 * Requests go through the identity suites' `call` (15 s deadline).
 */
import { expect } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { call, expectStatus, type Tenant } from "../identity/http-helpers.js"
import type { JsonResponse } from "../support/TestServer.js"

export const YAML = "application/yaml"

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

export const createAgent = (base: string, owner: { jwt: string }, agentId: string, yaml = agentYaml(agentId)) =>
  Effect.map(call(base, "POST", "/v1/agents", { token: owner.jwt, raw: yaml, contentType: YAML }), (response) =>
    expectStatus(response, 201)
  )

export const createPolicy = (base: string, owner: { jwt: string }, id: string, options: PolicyOptions) =>
  Effect.map(
    call(base, "POST", "/v1/policies", { token: owner.jwt, raw: policyDocument(id, options), contentType: YAML }),
    (response) => expectStatus(response, 201) as { id: string; enabled: boolean }
  )

export const setPolicyEnabled = (base: string, owner: { jwt: string }, id: string, enabled: boolean) =>
  Effect.map(
    call(base, "PATCH", `/v1/policies/${encodeURIComponent(id)}/enabled`, { token: owner.jwt, body: { enabled } }),
    (response) => expectStatus(response, 200) as { id: string; enabled: boolean }
  )

export const upsertTool = (base: string, owner: { jwt: string }, metadata: Record<string, unknown>) =>
  Effect.map(call(base, "POST", "/v1/tool-metadata", { token: owner.jwt, body: metadata }), (response) =>
    expectStatus(response, 200)
  )

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

export interface FindingBody {
  readonly id: string
  readonly policy_id: string | null
  readonly requirement_id: string | null
  readonly source: string
  readonly reason: string
  readonly remediation: string | null
  readonly effect: string
  readonly severity: string
  readonly evidence: any
}

export interface DecisionBody {
  readonly effect: "permit" | "deny" | "defer" | "rewrite"
  readonly domain: string
  readonly reason: string
  readonly intent_id: string
  readonly receipt_id: string
  readonly trace_id: string
  readonly latency_ms: number
  readonly findings: ReadonlyArray<FindingBody>
  readonly applied_grant: any
  readonly approval: any
  readonly lease: any
  readonly status: any
  readonly transformed_value: string | null
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

/** The event body for `tenant` and `agentId` (principal from the tenant's workspace and default environment). */
export const eventBody = (tenant: Tenant, agentId: string, action: Action, extras: EventExtras = {}) => {
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

/** `POST /v1/events`, answering the raw response. */
export const proposeRaw = (base: string, tenant: Tenant, agentId: string, action: Action, extras: EventExtras = {}) =>
  call(base, "POST", "/v1/events", {
    token: extras.token ?? tenant.jwt,
    body: eventBody(tenant, agentId, action, extras)
  })

/** Checks the invariants every decision carries. */
export const expectDecisionShape = (decision: DecisionBody, text = JSON.stringify(decision)) => {
  expect(Object.keys(decision).sort(), text).toEqual(DECISION_KEYS)
  expect(["permit", "deny", "defer", "rewrite"], text).toContain(decision.effect)
  expect(decision.intent_id, text).toMatch(/^\S+$/)
  expect(decision.receipt_id, text).toMatch(/^\S+$/)
  expect(decision.trace_id, text).toMatch(/^\S+$/)
  expect(Number.isInteger(decision.latency_ms) && decision.latency_ms >= 0, text).toBe(true)
  expect(Array.isArray(decision.findings), text).toBe(true)
  if (decision.effect !== "rewrite") expect(decision.transformed_value, text).toBeNull()
}

/** `POST /v1/events` that must answer 200 with a well-formed decision. */
export const propose = (base: string, tenant: Tenant, agentId: string, action: Action, extras: EventExtras = {}) =>
  Effect.map(proposeRaw(base, tenant, agentId, action, extras), (response) => {
    const decision = expectStatus(response, 200) as DecisionBody
    expectDecisionShape(decision, response.text)
    return decision
  })

export const reply = (content: string): Action => ({ operation: "reply", content })

/** The requirement ids (or policy ids) of a decision's findings. */
export const reasonsOf = (decision: DecisionBody) =>
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

export interface RunBody {
  readonly id: string
  readonly agent_id: string
  readonly workspace_id: string
  readonly environment: string
  readonly environment_id: string
  readonly external_id: string | null
  readonly kind: string
  readonly status: string
  readonly blocked_count: number
  readonly escalated_count: number
  readonly rewritten_count: number
  readonly trace_count: number
  readonly p95_latency_ms: number
  readonly metadata: unknown
  readonly created_at: string
  readonly started_at: string | null
  readonly ended_at: string | null
  readonly updated_at: string
}

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

export interface RunEventBody {
  readonly id: string
  readonly run_id: string
  readonly workspace_id: string
  readonly kind: string
  readonly sequence: number
  readonly label: string | null
  readonly input_summary: string | null
  readonly output_summary: string | null
  readonly metadata: unknown
  readonly created_at: string
  readonly occurred_at: string
}

export interface TraceBody {
  readonly trace_id: string
  readonly run_id: string | null
  readonly run_event_id: string | null
  readonly session_id: string | null
  readonly decision: string
  readonly domain: string
  readonly environment: string
  readonly environment_id: string
  readonly elapsed_ms: number
  readonly latest_review_outcome: string | null
  readonly latest_reviewed_at: string | null
  readonly created_at: string
  readonly payload: any
}

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

export interface ReviewBody {
  readonly id: string
  readonly trace_id: string
  readonly run_id: string | null
  readonly run_event_id: string | null
  readonly workspace_id: string
  readonly reviewer_id: string
  readonly outcome: string
  readonly reason_codes: ReadonlyArray<string>
  readonly note: string | null
  readonly metadata: unknown
  readonly created_at: string
}

export const createRun = (base: string, owner: { jwt: string }, body: Record<string, unknown>) =>
  Effect.map(
    call(base, "POST", "/v1/runs", { token: owner.jwt, body }),
    (response) => expectStatus(response, 201) as RunBody
  )

export const getRun = (base: string, owner: { jwt: string }, id: string) =>
  Effect.map(call(base, "GET", `/v1/runs/${encodeURIComponent(id)}`, { token: owner.jwt }), (response) => {
    const detail = expectStatus(response, 200) as {
      run: RunBody
      events: Array<RunEventBody>
      traces: Array<TraceBody>
      guardrail_usage: Array<unknown>
      budget_decision: unknown
      provider_usage: unknown
    }
    return detail
  })

export const appendEvent = (base: string, owner: { jwt: string }, runId: string, body: Record<string, unknown>) =>
  Effect.map(
    call(base, "POST", `/v1/runs/${encodeURIComponent(runId)}/events`, { token: owner.jwt, body }),
    (response) => expectStatus(response, 201) as RunEventBody
  )

/** GET of a list endpoint answering 200; `query` is appended as URL parameters. */
export const list = <A>(
  base: string,
  owner: { jwt: string },
  path: string,
  key: string,
  query: Record<string, string | number | undefined> = {}
) =>
  Effect.map(call(base, "GET", `${path}${queryString(query)}`, { token: owner.jwt }), (response) => {
    const body = expectStatus(response, 200) as Record<string, unknown> & { next_cursor?: string }
    expect(Array.isArray(body[key]), response.text).toBe(true)
    return { items: body[key] as Array<A>, next_cursor: body.next_cursor, response }
  })

export const queryString = (query: Record<string, string | number | undefined>) => {
  const params = new URLSearchParams()
  for (const [key, value] of Object.entries(query)) if (value !== undefined) params.set(key, String(value))
  const text = params.toString()
  return text === "" ? "" : `?${text}`
}

/** Follows `next_cursor` from the first page to the last; answers every page. */
export const allPages = <A>(
  base: string,
  owner: { jwt: string },
  path: string,
  key: string,
  query: Record<string, string | number | undefined> = {},
  maxPages = 200
) =>
  Effect.gen(function* () {
    const pages: Array<Array<A>> = []
    let cursor: string | undefined
    for (let i = 0; i < maxPages; i++) {
      const page = yield* list<A>(base, owner, path, key, { ...query, cursor })
      pages.push(page.items)
      if (page.next_cursor === undefined) return pages
      expect(typeof page.next_cursor).toBe("string")
      cursor = page.next_cursor
    }
    throw new Error(`more than ${maxPages} pages`)
  })

/** A base64url cursor holding `text`: how the service's own cursors are encoded, forged. */
export const forgedCursor = (text: string) => Buffer.from(text).toString("base64url")

/** Asserts a response is not a server error (nothing a client sends may produce a 500). */
export const expectNot5xx = (response: JsonResponse) => expect(response.status, response.text).toBeLessThan(500)
