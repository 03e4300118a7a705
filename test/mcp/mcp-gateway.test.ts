/**
 * The MCP gateway over HTTP against the real service: the official MCP
 * TypeScript SDK client (`StreamableHTTPClientTransport` with a runtime
 * key) through `/v1/mcp/{server_id}` to an SDK server on loopback. Covers
 * the servers' CRUD (headers write-only, other workspaces 404, the feature
 * flag), disabled tools hidden, tool calls decided before they go out
 * (permit, deny, defer then grant), tool results screened (withheld,
 * rewritten), a trace per decision, and both upstream answer types (SSE
 * and JSON).
 */
import { afterAll, describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { expectFailure } from "../support/Api.js"
import { queryDatabase } from "../support/Database.js"
import { eventually } from "../support/Eventually.js"
import { createPolicy } from "../support/Events.js"
import { call } from "../support/Raw.js"
import { createKey, keyClient, tenant } from "../support/Tenants.js"
import { SERVER_OPTIONS, TestDatabaseUrl, testServerWithDatabase } from "../support/TestServer.js"
import { GATEWAY_SETTINGS } from "../gateway/gateway-helpers.js"
import { EMAIL_TEXT, IBAN, INJECTED_TEXT, startMcpUpstream } from "./mcp-upstream.js"
import {
  AGENT,
  callTool,
  connect,
  invocations,
  mcpTenant,
  screenContent,
  SERVER_TOKEN,
  sessionTraces
} from "./mcp-helpers.js"

const sse = await startMcpUpstream()
const json = await startMcpUpstream({ jsonResponse: true })
afterAll(() => Promise.all([sse.close(), json.close()]))

layer(testServerWithDatabase("database", GATEWAY_SETTINGS), SERVER_OPTIONS)(
  "MCP gateway with the official SDK",
  (it) => {
    describe("servers", () => {
      it.effect("CRUD: headers are write-only, other workspaces get 404, runtime keys only read", () =>
        Effect.gen(function* () {
          const setup = yield* mcpTenant(sse.url)
          const { base, owner, serverId } = setup
          const created = yield* owner.api.mcpServers.getMcpServer({ path: { id: serverId } })
          expect(created).toMatchObject({
            display_name: "Mail",
            url: sse.url,
            agent_id: AGENT,
            result_origin: "tool_output",
            header_names: ["X-Upstream-Token"],
            headers_status: "configured"
          })
          for (const path of ["/v1/mcp/servers", `/v1/mcp/servers/${serverId}`]) {
            const raw = yield* call(base, "GET", path, { token: owner.jwt })
            expect(raw.status).toBe(200)
            expect(raw.text).not.toContain(SERVER_TOKEN)
          }

          // A server decides for one registered agent.
          for (const attempt of [
            call(base, "POST", "/v1/mcp/servers", {
              token: owner.jwt,
              body: { display_name: "x", url: sse.url, agent_id: "ghost-bot" }
            }),
            call(base, "PATCH", `/v1/mcp/servers/${serverId}`, { token: owner.jwt, body: { agent_id: "ghost-bot" } })
          ]) {
            const refused = yield* attempt
            expect([refused.status, refused.body]).toMatchObject([404, { error: { code: "agent_not_found" } }])
          }

          const updated = yield* owner.api.mcpServers.updateMcpServer({
            path: { id: serverId },
            payload: { display_name: "Mailbox", result_origin: "email" }
          })
          expect(updated).toMatchObject({
            display_name: "Mailbox",
            result_origin: "email",
            header_names: ["X-Upstream-Token"]
          })
          // A new url without the headers again would send them to a new address: refused.
          yield* expectFailure(
            owner.api.mcpServers.updateMcpServer({ path: { id: serverId }, payload: { url: json.url } }),
            400,
            "validation_failed"
          )
          const moved = yield* owner.api.mcpServers.updateMcpServer({
            path: { id: serverId },
            payload: { url: json.url, headers: null }
          })
          expect(moved).toMatchObject({ url: json.url, header_names: [], headers_status: "none" })
          // The outbound guard: internal addresses off the allowlist are refused.
          yield* expectFailure(
            owner.api.mcpServers.createMcpServer({
              payload: { display_name: "Metadata", url: "http://169.254.169.254/mcp", agent_id: AGENT }
            }),
            400,
            "validation_failed"
          )
          // A reserved header name is refused by the schema.
          const reserved = yield* call(base, "POST", "/v1/mcp/servers", {
            token: owner.jwt,
            body: { display_name: "x", url: sse.url, agent_id: AGENT, headers: { "Mcp-Session-Id": "x" } }
          })
          expect(reserved.status).toBe(400)

          const other = yield* tenant(base)
          yield* expectFailure(
            other.api.mcpServers.getMcpServer({ path: { id: serverId } }),
            404,
            "mcp_server_not_found"
          )
          yield* expectFailure(
            other.api.mcpServers.updateMcpServer({ path: { id: serverId }, payload: { display_name: "mine" } }),
            404,
            "mcp_server_not_found"
          )
          yield* expectFailure(
            other.api.mcpServers.deleteMcpServer({ path: { id: serverId } }),
            404,
            "mcp_server_not_found"
          )
          const otherKey = yield* createKey(other)
          const foreign = yield* call(base, "POST", `/v1/mcp/${serverId}`, {
            token: otherKey.plaintext_key,
            body: { jsonrpc: "2.0", id: 1, method: "ping" }
          })
          expect(foreign.status).toBe(404)

          const runtime = yield* keyClient(base, { plaintext_key: setup.key })
          expect(
            (yield* runtime.mcpServers.listMcpServers({ urlParams: {} })).mcp_servers.map((server) => server.id)
          ).toEqual([serverId])
          yield* expectFailure(runtime.mcpServers.deleteMcpServer({ path: { id: serverId } }), 403)

          yield* owner.api.mcpServers.deleteMcpServer({ path: { id: serverId } })
          yield* expectFailure(
            owner.api.mcpServers.getMcpServer({ path: { id: serverId } }),
            404,
            "mcp_server_not_found"
          )
        })
      )

      it.effect("with is_mcp_gateway_enabled false, the servers and the endpoint answer 403 feature_disabled", () =>
        Effect.gen(function* () {
          const db = yield* TestDatabaseUrl
          const setup = yield* mcpTenant(sse.url)
          const { base, owner, serverId } = setup
          yield* queryDatabase(db, "update workspaces set is_mcp_gateway_enabled = false where id = $1", [
            owner.workspaceId
          ])
          yield* queryDatabase(db, "select pg_notify('guardrail_changes', $1)", [`feature_flags:${owner.workspaceId}`])
          yield* eventually(
            Effect.flatMap(call(base, "GET", "/v1/mcp/servers", { token: owner.jwt }), (response) =>
              response.status === 403 ? Effect.void : Effect.fail(`still ${response.status}`)
            )
          )
          const listed = yield* call(base, "GET", "/v1/mcp/servers", { token: owner.jwt })
          expect(listed.body).toMatchObject({ error: { code: "feature_disabled" } })
          const endpoint = yield* call(base, "POST", `/v1/mcp/${serverId}`, {
            token: setup.key,
            body: { jsonrpc: "2.0", id: 1, method: "ping" }
          })
          expect(endpoint.status).toBe(403)
          expect(endpoint.body).toMatchObject({ error: { code: "feature_disabled" } })
        })
      )
    })

    describe("tools", () => {
      it.scoped(
        "lists without disabled tools; an allowed call passes through with the server's headers; one trace per decision",
        () =>
          Effect.gen(function* () {
            const setup = yield* mcpTenant(sse.url)
            yield* setup.owner.api.toolMetadata.upsertToolMetadata({
              payload: { tool: "delete_mailbox", reversible: false, side_effect: "delete", enabled: false }
            })
            const { client, transport } = yield* connect(setup)
            const { tools } = yield* Effect.promise(() => client.listTools())
            expect(tools.map((tool) => tool.name).sort()).toEqual([
              "confirm_transfer",
              "fetch_attachment",
              "long_report",
              "lookup_customer",
              "lookup_order",
              "lookup_payee",
              "read_email",
              "send_money",
              "summarize"
            ])

            const before = invocations(sse, "lookup_order")
            const result = yield* callTool(client, "lookup_order", { order_id: "o-7" })
            expect(result).toEqual({ text: "Order o-7: shipped", isError: false })
            expect(invocations(sse, "lookup_order")).toBe(before + 1)

            // A hidden tool is not called either.
            const hidden = yield* callTool(client, "delete_mailbox", {})
            expect(hidden.isError).toBe(true)
            expect(invocations(sse, "delete_mailbox")).toBe(0)

            // The server's header went upstream; the agent's runtime key did not.
            const seen = sse.requests.filter((request) => request.headers["mcp-session-id"] === transport.sessionId)
            expect(seen.length).toBeGreaterThan(0)
            for (const request of seen) {
              expect(request.headers["x-upstream-token"]).toBe(SERVER_TOKEN)
              expect(request.headers["authorization"]).toBeUndefined()
            }

            const sessionId = transport.sessionId!
            expect(yield* sessionTraces(setup.owner, sessionId)).toEqual([
              // The listed tools' descriptions were decided too (docs/mcp.md).
              { effect: "permit", kind: "tool.result", operation: "tools/list" },
              { effect: "permit", kind: "output.proposed", operation: "lookup_order" },
              { effect: "permit", kind: "tool.result", operation: "lookup_order" }
            ])
            // The result is labelled with the server's result_origin.
            const { traces } = yield* setup.owner.api.traces.listTraces({ urlParams: { session_id: sessionId } })
            expect(JSON.stringify(traces[0]!.payload)).toContain('"origin":"tool_output"')
          })
      )

      it.scoped("a denied call answers isError with the reason and never reaches the server", () =>
        Effect.gen(function* () {
          const setup = yield* mcpTenant(sse.url)
          yield* createPolicy(setup.base, setup.owner, "no-send-money", {
            target: "operation",
            value: "send_money",
            description: "Agents never send money"
          })
          const { client, transport } = yield* connect(setup)
          const before = invocations(sse, "send_money")
          const denied = yield* callTool(client, "send_money", { iban: IBAN, amount: 500 })
          expect(denied.isError).toBe(true)
          expect(denied.text).toContain("denied")
          expect(denied.text).toContain("no-send-money")
          expect(invocations(sse, "send_money")).toBe(before)
          expect(yield* sessionTraces(setup.owner, transport.sessionId!)).toEqual([
            { effect: "deny", kind: "output.proposed", operation: "send_money" }
          ])
        })
      )

      it.scoped("a call deferred for approval passes once its intent is granted", () =>
        Effect.gen(function* () {
          const setup = yield* mcpTenant(sse.url)
          const { owner } = setup
          yield* owner.api.toolMetadata.upsertToolMetadata({
            payload: { tool: "send_money", reversible: false, side_effect: "payment", approval: true }
          })
          yield* owner.api.settings.updateSettings({ payload: { approval_checker_mode: "enforce" } })
          const { client } = yield* connect(setup)
          const before = invocations(sse, "send_money")
          const args = { iban: IBAN, amount: 20 }
          const deferred = yield* callTool(client, "send_money", args)
          expect(deferred.isError).toBe(true)
          expect(deferred.text).toContain("deferred")
          const intentId = /int_[0-9a-f]{32}/.exec(deferred.text)?.[0]
          expect(intentId).toBeDefined()
          expect(invocations(sse, "send_money")).toBe(before)

          yield* owner.api.receipts.grantApproval({ path: { intent_id: intentId! }, payload: { note: "checked" } })
          const passed = yield* callTool(client, "send_money", args)
          expect(passed).toEqual({ text: `Sent 20 EUR to ${IBAN}`, isError: false })
          expect(invocations(sse, "send_money")).toBe(before + 1)
        })
      )
    })

    describe("bad requests", () => {
      it.effect("a batch, a malformed message or tools/call, a bad session id: 400; an unreachable server: 502", () =>
        Effect.gen(function* () {
          const setup = yield* mcpTenant(sse.url)
          const post = (serverId: string, body: unknown, headers: Record<string, string> = {}) =>
            call(setup.base, "POST", `/v1/mcp/${serverId}`, {
              token: setup.key,
              headers: { accept: "application/json, text/event-stream", ...headers },
              body
            })
          const ping = { jsonrpc: "2.0", id: 1, method: "ping" }
          const batch = yield* post(setup.serverId, [ping])
          expect(batch.status).toBe(400)
          expect(batch.body).toMatchObject({ error: { code: "validation_failed" } })
          expect((yield* post(setup.serverId, { ...ping, jsonrpc: "1.0" })).status).toBe(400)
          const badCall = { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "x".repeat(500) } }
          expect((yield* post(setup.serverId, badCall)).status).toBe(400)
          expect((yield* post(setup.serverId, ping, { "mcp-session-id": "x".repeat(300) })).status).toBe(400)

          // A port nothing listens on (a stub's, once closed).
          const gone = yield* Effect.promise(() => startMcpUpstream())
          yield* Effect.promise(() => gone.close())
          const server = yield* setup.owner.api.mcpServers.createMcpServer({
            payload: { display_name: "Gone", url: gone.url, agent_id: AGENT }
          })
          const unreachable = yield* post(server.id, ping)
          expect(unreachable.status).toBe(502)
          expect(unreachable.body).toMatchObject({
            error: { code: "upstream_unreachable", message: "The MCP server could not be reached." }
          })
        })
      )
    })

    describe("tool results", () => {
      for (const [name, upstream] of [
        ["SSE", sse],
        ["JSON", json]
      ] as const) {
        it.scoped(`${name} answers: an injected instruction is withheld, an IBAN rewritten, the session ended`, () =>
          Effect.gen(function* () {
            const setup = yield* mcpTenant(upstream.url)
            yield* screenContent(setup)
            const { client, transport } = yield* connect(setup)
            const injected = yield* callTool(client, "read_email", { id: "injected" })
            expect(injected.isError).toBe(true)
            expect(injected.text).toContain("withheld")
            expect(injected.text).not.toContain(INJECTED_TEXT)

            const rewritten = yield* callTool(client, "read_email", { id: "m-1" })
            expect(rewritten).toEqual({ text: EMAIL_TEXT.replace(IBAN, "[iban removed]"), isError: false })

            // Text outside text items is screened too: an embedded resource, structured content.
            const attachment = yield* callTool(client, "fetch_attachment", { id: "injected" })
            expect(attachment.isError).toBe(true)
            expect(attachment.text).not.toContain(INJECTED_TEXT)
            const payee = yield* Effect.promise(() =>
              client.callTool({ name: "lookup_payee", arguments: { name: "Ada" } })
            )
            expect(JSON.stringify(payee)).not.toContain(IBAN)
            expect(payee.structuredContent).toEqual({ name: "Ada", iban: "[iban removed]" })
            expect(payee.isError).not.toBe(true)

            const sessionId = transport.sessionId!
            expect(yield* sessionTraces(setup.owner, sessionId)).toEqual([
              { effect: "permit", kind: "output.proposed", operation: "read_email" },
              { effect: "deny", kind: "tool.result", operation: "read_email" },
              { effect: "permit", kind: "output.proposed", operation: "read_email" },
              { effect: "rewrite", kind: "tool.result", operation: "read_email" },
              { effect: "permit", kind: "output.proposed", operation: "fetch_attachment" },
              { effect: "deny", kind: "tool.result", operation: "fetch_attachment" },
              { effect: "permit", kind: "output.proposed", operation: "lookup_payee" },
              { effect: "rewrite", kind: "tool.result", operation: "lookup_payee" }
            ])

            // DELETE ends the session at the server; the id is then unknown there.
            yield* Effect.promise(() => transport.terminateSession())
            const after = yield* call(setup.base, "POST", `/v1/mcp/${setup.serverId}`, {
              token: setup.key,
              headers: { "mcp-session-id": sessionId, accept: "application/json, text/event-stream" },
              body: { jsonrpc: "2.0", id: 9, method: "tools/list" }
            })
            expect(after.status).toBe(404)
          })
        )
      }
    })
  }
)
