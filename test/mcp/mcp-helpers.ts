/** Shared by the MCP gateway suites: a tenant with a server, an SDK client through the gateway, tool calls, traces. */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { ClientCapabilities } from "@modelcontextprotocol/sdk/types.js"
import { Effect, Redacted } from "effect"
import type { McpServerId } from "../../src/mcp/Domain.js"
import { registerAgent } from "../gateway/gateway-helpers.js"
import { createPolicy } from "../support/Events.js"
import { createKey, tenant, type Tenant } from "../support/Tenants.js"
import { request } from "../support/Raw.js"
import { baseUrl } from "../support/TestServer.js"
import { IBAN } from "./mcp-upstream.js"

export const AGENT = "mail-bot"
export const SERVER_TOKEN = "upstream-token-0123456789"

export interface Setup {
  readonly base: string
  readonly owner: Tenant
  readonly key: string
  readonly serverId: McpServerId
}

/** A tenant with a runtime key and an MCP server at `url` (with a secret header). */
export const mcpTenant = (url: string) =>
  Effect.gen(function* () {
    const base = yield* baseUrl
    const owner = yield* tenant(base)
    const key = yield* createKey(owner)
    yield* registerAgent(owner, AGENT)
    const server = yield* owner.api.mcpServers.createMcpServer({
      payload: {
        display_name: "Mail",
        url,
        agent_id: AGENT,
        headers: Redacted.make({ "X-Upstream-Token": SERVER_TOKEN })
      }
    })
    return { base, owner, key: key.plaintext_key, serverId: server.id } satisfies Setup
  })

/**
 * An SDK client connected through the gateway with the runtime key; closed with the scope. `capabilities`
 * and `prepare` (e.g. request handlers) are set before it connects.
 */
export const connect = (
  setup: Setup,
  capabilities: ClientCapabilities = {},
  prepare: (client: Client) => void = () => undefined
) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const transport = new StreamableHTTPClientTransport(new URL(`${setup.base}/v1/mcp/${setup.serverId}`), {
        requestInit: { headers: { Authorization: `Bearer ${setup.key}` } }
      })
      const client = new Client({ name: "test-agent", version: "1.0.0" }, { capabilities })
      prepare(client)
      await client.connect(transport)
      return { client, transport }
    }),
    ({ client }) => Effect.promise(() => client.close())
  )

export interface ToolResult {
  readonly text: string
  readonly isError: boolean
}

export const callTool = (client: Client, name: string, args: Record<string, unknown>) =>
  Effect.promise(async (): Promise<ToolResult> => {
    const result = await client.callTool({ name, arguments: args })
    const content = result.content as ReadonlyArray<{ readonly type: string; readonly text?: string }>
    return { text: content.map((item) => item.text ?? "").join("\n"), isError: result.isError === true }
  })

export const invocations = (upstream: { readonly invocations: Map<string, number> }, tool: string) =>
  upstream.invocations.get(tool) ?? 0

/** The workspace's traces of one MCP session, oldest first. */
export const sessionTraces = (owner: Tenant, sessionId: string) =>
  Effect.map(owner.api.traces.listTraces({ urlParams: { session_id: sessionId } }), (page) =>
    [...page.traces].reverse().map((trace) => {
      const request = (
        trace.payload as {
          readonly request: { readonly kind: string; readonly action: { readonly operation: string } }
        }
      ).request
      return { effect: trace.decision, kind: request.kind, operation: request.action.operation }
    })
  )

/** A policy rewriting the IBAN in what comes back from the server to `[iban removed]`. */
export const redactIban = (setup: Setup) =>
  createPolicy(setup.base, setup.owner, "redact-iban", {
    value: IBAN,
    action: "rewrite",
    rewrite: "[iban removed]",
    appliesTo: ["tool.result"]
  })

/** The content policies the screening suites share: an injected instruction denied, an IBAN rewritten. */
export const screenContent = (setup: Setup) =>
  Effect.gen(function* () {
    yield* createPolicy(setup.base, setup.owner, "no-injection", {
      value: "ignore previous instructions",
      appliesTo: ["tool.result"]
    })
    yield* redactIban(setup)
  })

/** One JSON-RPC message POSTed to the gateway's endpoint with the runtime key, as raw HTTP (no SDK session). */
export const postMessage = (setup: Setup, message: Record<string, unknown>) =>
  request(`${setup.base}/v1/mcp/${setup.serverId}`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${setup.key}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream"
    },
    body: JSON.stringify({ jsonrpc: "2.0", ...message })
  })

/** A `tools/call` of `lookup_order` with JSON-RPC id 7, POSTed raw (postMessage). */
export const rawLookupCall = (setup: Setup) =>
  postMessage(setup, { id: 7, method: "tools/call", params: { name: "lookup_order", arguments: { order_id: "o-1" } } })
