/**
 * Helpers of the catalog HTTP suites: documents (agent profiles, policies)
 * as YAML or JSON text, and the calls that send them through the contract's
 * typed client (`owner.api`). `sendText` is the raw request, for what the
 * client cannot send (JSON text or another media type on a YAML endpoint).
 */
import { expect } from "@effect/vitest"
import { Effect } from "effect"
import { parse } from "yaml"
import { AgentId, PolicyId } from "../../src/catalog/Domain.js"
import { type Caller, keysOf } from "../support/Api.js"
import { yamlBytes } from "../support/Events.js"
import { call, type JsonResponse, SNAKE_CASE } from "../support/Raw.js"

export const YAML = "application/yaml"
export const JSON_TYPE = "application/json"

export const POLICY_ID = /^[a-z0-9][a-z0-9_.-]{0,127}$/

export const SUMMARY_KEYS = ["action", "description", "enabled", "family", "id", "owner_agent_id", "severity"]
export const DETAIL_KEYS = [...SUMMARY_KEYS, "source_yaml", "version"].sort()

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
export const fullAgentJson = (agentId: string, displayName = "Support Bot"): unknown =>
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

/** The path of an agent. */
export const agentPath = (id: string) => ({ id: AgentId.make(id) })

/** The path of a policy. */
export const policyPath = (id: string) => ({ id: PolicyId.make(id) })

/**
 * Sends a text document raw: for what the typed client cannot send (JSON
 * text as application/json, text/plain, another media type).
 */
export const sendText = (
  base: string,
  token: string,
  method: string,
  path: string,
  text: string,
  contentType = YAML,
  workspace?: string
) => call(base, method, path, { token, raw: text, contentType, workspace })

/** Asserts the status of a raw answer; answers its body. */
export const expectRawStatus = (response: JsonResponse, status: number): unknown => {
  expect(response.status, response.text).toBe(status)
  return response.body
}

export const createAgent = (caller: Caller, yaml: string) => caller.api.agents.createAgent({ payload: yamlBytes(yaml) })

export const getAgent = (caller: Caller, id: string) => caller.api.agents.getAgent({ path: agentPath(id) })

export const listAgents = (caller: Caller) => Effect.map(caller.api.agents.listAgents(), (body) => body.agents)

export const createPolicy = (caller: Caller, yaml: string) =>
  caller.api.policies.createPolicy({ payload: yamlBytes(yaml) })

export const validatePolicy = (caller: Caller, text: string) =>
  caller.api.policies.validatePolicy({ payload: yamlBytes(text) })

export const getPolicy = (caller: Caller, id: string) => caller.api.policies.getPolicy({ path: policyPath(id) })

export const listPolicies = (caller: Caller) => Effect.map(caller.api.policies.listPolicies(), (body) => body.policies)

export const setEnabled = (caller: Caller, id: string, enabled: boolean) =>
  caller.api.policies.setPolicyEnabled({ path: policyPath(id), payload: { enabled } })

export const generate = (caller: Caller, agentId: string) =>
  Effect.map(caller.api.agents.generateAgentGuardrails({ path: agentPath(agentId) }), (body) => body.generated)

export const guardrails = (caller: Caller, agentId: string) =>
  Effect.map(caller.api.agents.listAgentGuardrails({ path: agentPath(agentId) }), (body) => body.policies)

/** The value at `key` of a JSON object (fails the test for anything else). */
export const fieldOf = (value: unknown, key: string): unknown => {
  keysOf(value)
  return (value as Record<string, unknown>)[key]
}

/** The list at `key` of a JSON object, e.g. the rows of a list answer (fails the test for anything else). */
export const rowsOf = (value: unknown, key: string): ReadonlyArray<unknown> => {
  const rows = fieldOf(value, key)
  expect(Array.isArray(rows), JSON.stringify(value)).toBe(true)
  return rows as ReadonlyArray<unknown>
}

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

interface Details {
  readonly details?: ReadonlyArray<{ readonly path: string; readonly message: string }> | undefined
}

/** The detail paths of an error (empty when none). */
export const detailPaths = (error: Details) => (error.details ?? []).map((detail) => detail.path)

/** Asserts the error lists details, each with a string path and a non-empty message. */
export const expectWellFormedDetails = (error: Details) => {
  const text = JSON.stringify(error)
  expect(Array.isArray(error.details), text).toBe(true)
  for (const detail of error.details ?? []) {
    expect(typeof detail.path, text).toBe("string")
    expect(typeof detail.message === "string" && detail.message.length > 0, text).toBe(true)
  }
}

/** Asserts an error carries the conventions' snake_case code and a message (what `isErrorBody` checks of a raw body). */
export const expectErrorShape = (error: { readonly code: string; readonly message: string }) => {
  expect(error.code, error.message).toMatch(SNAKE_CASE)
  expect(error.message.length, error.code).toBeGreaterThan(0)
}
