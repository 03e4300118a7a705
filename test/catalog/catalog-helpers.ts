/**
 * Helpers of the catalog HTTP suites: documents (agent profiles, policies)
 * as YAML or JSON text, and the calls that send them. Requests go through
 * `call` (15 s deadline) and errors are checked with the identity suites'
 * `expectError` / `expectValidation`.
 */
import { expect } from "@effect/vitest"
import { Effect } from "effect"
import { parse } from "yaml"
import { call, expectStatus } from "../identity/http-helpers.js"
import type { JsonResponse } from "../support/TestServer.js"

export const YAML = "application/yaml"
export const JSON_TYPE = "application/json"

export const POLICY_ID = /^[a-z0-9][a-z0-9_.-]{0,127}$/

export const SUMMARY_KEYS = ["action", "description", "enabled", "family", "id", "owner_agent_id", "severity"]
export const DETAIL_KEYS = [...SUMMARY_KEYS, "source_yaml"].sort()

export interface PolicySummaryBody {
  readonly id: string
  readonly description: string
  readonly family: string
  readonly severity: string
  readonly action: string
  readonly enabled: boolean
  readonly owner_agent_id: string | null
}

export interface PolicyDetailBody extends PolicySummaryBody {
  readonly source_yaml: string
}

export interface AgentBody {
  readonly agent_id: string
  readonly display_name: string
  readonly system_prompt: string | null
  readonly target_url: string | null
  readonly authority: { readonly can_promise: Array<string>; readonly cannot_promise: Array<string> }
  readonly scope: { readonly in_scope: Array<string>; readonly out_of_scope: Array<string> }
  readonly tone: { readonly target: string; readonly forbidden: Array<string> }
  readonly escalation_triggers: Array<string>
  readonly knowledge_sources: Array<unknown>
  readonly workflow_definition: unknown
  readonly workflow_requirements: Array<unknown>
}

/** A minimal agent profile as YAML: the sample's required fields only. */
export const minimalAgentYaml = (agentId: string, displayName = "Minimal Bot") =>
  [
    `agent_id: ${agentId}`,
    `display_name: ${displayName}`,
    "authority: {}",
    "scope: {}",
    "tone:",
    "  target: neutral"
  ].join("\n") + "\n"

/**
 * A full profile as YAML, one of every generated-policy source:
 * 2 cannot_promise + 1 out_of_scope + 1 tone.forbidden + 1 escalation trigger
 * + 1 sensitive step (approval) + 1 required-before step (flow) = 7 policies.
 */
export const fullAgentYaml = (agentId: string, displayName = "Support Bot") => `# the support agent's profile
agent_id: ${agentId}
display_name: ${displayName}
system_prompt: You help customers with orders.
target_url: https://agent.example.com/chat
authority:
  can_promise:
    - a callback within one business day
  cannot_promise:
    - a full refund
    - free shipping forever
scope:
  in_scope: [orders, shipping]
  out_of_scope: [legal advice]
tone:
  target: friendly and concise
  forbidden: [stupid]
escalation_triggers:
  - lawyer
knowledge_sources:
  - kb_id: faq
    description: Public FAQ
    url: https://example.com/faq
    kind: local
workflow_definition:
  steps: [verify_identity, issue_refund]
workflow_requirements:
  - name: verify_identity
    required_before: [issue_refund]
    sensitive_steps: [close_account]
`

export const FULL_AGENT_POLICY_COUNT = 7

/** The same full profile as a JSON value. */
export const fullAgentJson = (agentId: string, displayName = "Support Bot") =>
  parse(fullAgentYaml(agentId, displayName))

/** A valid policy document as YAML; `fields` override or add top-level lines (already YAML). */
export const policyYaml = (
  id: string,
  options: {
    readonly action?: string
    readonly enabled?: boolean
    readonly owner?: string
    readonly value?: string
    readonly description?: string
  } = {}
) =>
  [
    `id: ${id}`,
    `description: ${options.description ?? "Never promise a refund"}`,
    "family: content",
    "severity: high",
    `action: ${options.action ?? "deny"}`,
    ...(options.enabled === undefined ? [] : [`enabled: ${options.enabled}`]),
    ...(options.owner === undefined ? [] : [`owner_agent_id: ${options.owner}`]),
    "match:",
    "  type: literal",
    `  value: ${options.value ?? "full refund"}`,
    "  target: content",
    ...(options.action === "rewrite" ? ['rewrite: "[removed]"'] : [])
  ].join("\n") + "\n"

/** Sends a text document (YAML or JSON text). */
export const sendText = (
  base: string,
  token: string,
  method: string,
  path: string,
  text: string,
  contentType = YAML,
  workspace?: string
) => call(base, method, path, { token, raw: text, contentType, workspace })

export const createAgent = (base: string, token: string, yaml: string, workspace?: string) =>
  Effect.map(
    sendText(base, token, "POST", "/v1/agents", yaml, YAML, workspace),
    (response) => expectStatus(response, 201) as AgentBody
  )

export const createPolicy = (base: string, token: string, yaml: string, workspace?: string) =>
  Effect.map(
    sendText(base, token, "POST", "/v1/policies", yaml, YAML, workspace),
    (response) => expectStatus(response, 201) as PolicyDetailBody
  )

export const getPolicy = (base: string, token: string, id: string, workspace?: string) =>
  Effect.map(
    call(base, "GET", `/v1/policies/${encodeURIComponent(id)}`, { token, workspace }),
    (response) => expectStatus(response, 200) as PolicyDetailBody
  )

export const listPolicies = (base: string, token: string, workspace?: string) =>
  Effect.map(
    call(base, "GET", "/v1/policies", { token, workspace }),
    (response) => (expectStatus(response, 200) as { policies: Array<PolicySummaryBody> }).policies
  )

export const setEnabled = (base: string, token: string, id: string, enabled: boolean) =>
  Effect.map(
    call(base, "PATCH", `/v1/policies/${encodeURIComponent(id)}/enabled`, { token, body: { enabled } }),
    (response) => expectStatus(response, 200) as PolicyDetailBody
  )

export const generate = (base: string, token: string, agentId: string) =>
  Effect.map(
    call(base, "POST", `/v1/agents/${encodeURIComponent(agentId)}/guardrails/generate`, { token }),
    (response) => (expectStatus(response, 201) as { generated: Array<PolicyDetailBody> }).generated
  )

export const guardrails = (base: string, token: string, agentId: string) =>
  Effect.map(
    call(base, "GET", `/v1/agents/${encodeURIComponent(agentId)}/guardrails`, { token }),
    (response) => (expectStatus(response, 200) as { policies: Array<PolicySummaryBody> }).policies
  )

/** The parsed `source_yaml` of a policy. */
export const documentOf = (policy: { readonly source_yaml: string }) =>
  parse(policy.source_yaml) as {
    id: string
    match: { type: string; value: unknown; target: string; case_sensitive?: boolean }
    rewrite?: string
    [key: string]: unknown
  }

export const sortedKeys = (value: object) => Object.keys(value).sort()

export const ids = (rows: ReadonlyArray<{ readonly id: string }>) => rows.map((row) => row.id).sort()

/** The error detail paths of a response (empty when none). */
export const detailPaths = (response: JsonResponse) =>
  ((response.body as { error?: { details?: Array<{ path: string }> } }).error?.details ?? []).map(
    (detail) => detail.path
  )

/** Asserts every detail carries a string path and a non-empty message. */
export const expectWellFormedDetails = (response: JsonResponse) => {
  const details = (response.body as { error: { details?: Array<{ path: unknown; message: unknown }> } }).error.details
  expect(Array.isArray(details), response.text).toBe(true)
  for (const detail of details ?? []) {
    expect(typeof detail.path, response.text).toBe("string")
    expect(typeof detail.message === "string" && detail.message.length > 0, response.text).toBe(true)
  }
}
