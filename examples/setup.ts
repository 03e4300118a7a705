/**
 * What the examples need before an agent runs, made over plain HTTP against
 * a started service (`npm start`): a user and workspace, a runtime key, the
 * agent `support-bot` and four policies the example conversation meets.
 * Set GUARDRAIL_URL for a service elsewhere than http://localhost:8080.
 */
import { createHash, randomBytes } from "node:crypto"
import { createGuardrailClient, type GuardrailClientFacade } from "../src/client/index.js"

export const AGENT = "support-bot"

const POLICIES = [
  "id: no-override\ndescription: Instructions to ignore earlier ones\nfamily: content\nseverity: high\naction: deny\napplies_to: [input.received]\nmatch: {type: literal, value: ignore previous instructions, target: content}\n",
  "id: no-discount-code\ndescription: Discount codes are not given out\nfamily: content\nseverity: high\naction: deny\nmatch: {type: literal, value: SAVE50, target: content}\n",
  "id: no-attacker\ndescription: Money goes to known accounts only\nfamily: content\nseverity: critical\naction: deny\nmatch: {type: literal, value: attacker, target: params.to}\n",
  "id: no-secret-in-results\ndescription: Secrets in tool results are removed\nfamily: content\nseverity: high\naction: rewrite\nrewrite: '[removed]'\napplies_to: [tool.result]\nmatch: {type: literal, value: SECRET-123, target: content}\n"
]

const http = async (
  base: string,
  method: string,
  path: string,
  init: { token?: string; json?: unknown; yaml?: string; headers?: Record<string, string> }
) => {
  const headers: Record<string, string> = { ...init.headers }
  if (init.token !== undefined) headers["authorization"] = `Bearer ${init.token}`
  if (init.json !== undefined) headers["content-type"] = "application/json"
  if (init.yaml !== undefined) headers["content-type"] = "application/yaml"
  const response = await fetch(`${base}${path}`, {
    method,
    headers,
    ...(init.json === undefined ? {} : { body: JSON.stringify(init.json) }),
    ...(init.yaml === undefined ? {} : { body: init.yaml })
  })
  const body = (await response.json()) as Record<string, unknown>
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(body)}`)
  return body
}

/** A fresh workspace with the agent and policies; answers a client of its runtime key. */
export const setUp = async (): Promise<{
  readonly client: GuardrailClientFacade
  readonly baseUrl: string
  readonly apiKey: string
}> => {
  const baseUrl = process.env["GUARDRAIL_URL"] ?? "http://localhost:8080"
  const username = `example-${randomBytes(4).toString("hex")}`
  const password = createHash("sha256").update(`${username} password`).digest("hex")
  const session = await http(baseUrl, "POST", "/v1/auth/signup", { json: { username, password } })
  const jwt = String(session["jwt"])
  const mine = await http(baseUrl, "GET", "/v1/team/my-workspaces", {
    token: jwt,
    headers: { "x-service-user-id": String(session["user_id"]) }
  })
  const workspaceId = String((mine["workspaces"] as Array<{ id: string }>)[0]!.id)
  const { environments } = (await http(baseUrl, "GET", "/v1/environments", { token: jwt })) as {
    environments: Array<{ id: string; is_default: boolean }>
  }
  const environmentId = environments.find((environment) => environment.is_default)!.id
  await http(baseUrl, "POST", "/v1/agents", {
    token: jwt,
    yaml: [
      `agent_id: ${AGENT}`,
      "display_name: Support Bot",
      "system_prompt: You help customers with orders.",
      "authority: {can_promise: [a callback within one business day], cannot_promise: [a full refund]}",
      "scope: {in_scope: [orders, shipping], out_of_scope: [legal advice]}",
      "tone: {target: friendly, forbidden: [stupid]}",
      ""
    ].join("\n")
  })
  for (const policy of POLICIES) await http(baseUrl, "POST", "/v1/policies", { token: jwt, yaml: policy })
  const key = await http(baseUrl, "POST", "/v1/api-keys", { token: jwt, json: { name: "example-agent" } })
  const apiKey = String(key["plaintext_key"])
  const client = createGuardrailClient({
    baseUrl,
    apiKey,
    agentId: AGENT,
    workspaceId,
    environmentId
  })
  return { client, baseUrl, apiKey }
}
