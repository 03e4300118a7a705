/**
 * Resuming a stream through the MCP gateway (docs/mcp.md, "Resuming a
 * stream"): the official SDK server keeps its events (event store) and
 * closes a long call's stream at once, as the 2025-11-25 spec lets it; the
 * official SDK client resumes with `Last-Event-ID`. The gateway's event ids
 * carry what it needs to screen the rest as it screened the start, signed:
 * an id it did not give, or gave for another server, is refused.
 */
import { afterAll, describe, expect, layer } from "@effect/vitest"
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js"
import { Effect } from "effect"
import { call } from "../support/Raw.js"
import { SERVER_OPTIONS, testServerWithDatabase } from "../support/TestServer.js"
import { GATEWAY_SETTINGS } from "../gateway/gateway-helpers.js"
import { callTool, connect, mcpTenant, screenContent, sessionTraces } from "./mcp-helpers.js"
import { EMAIL_TEXT, IBAN, INJECTED_TEXT, startMcpUpstream } from "./mcp-upstream.js"

const resumable = await startMcpUpstream({ resumable: true })
afterAll(() => resumable.close())

layer(testServerWithDatabase("database", GATEWAY_SETTINGS), SERVER_OPTIONS)("MCP gateway: resuming", (it) => {
  describe("Last-Event-ID", () => {
    it.scoped("a call answered on a resumed stream is screened as that tool's result", () =>
      Effect.gen(function* () {
        const setup = yield* mcpTenant(resumable.url)
        yield* screenContent(setup)
        const { client, transport } = yield* connect(setup)
        const tokens: Array<string> = []
        const result = yield* Effect.promise(() =>
          client.callTool({ name: "long_report", arguments: { id: "r-1" } }, CallToolResultSchema, {
            onresumptiontoken: (token) => void tokens.push(token)
          })
        )
        expect(result.content).toEqual([{ type: "text", text: EMAIL_TEXT.replace(IBAN, "[iban removed]") }])
        // The client resumed with the gateway's id; the server was asked with its own.
        expect(tokens.length).toBeGreaterThan(0)
        expect(tokens.every((token) => token.startsWith("g1."))).toBe(true)
        const resumedUpstream = resumable.requests.filter((request) => request.headers["last-event-id"] !== undefined)
        expect(resumedUpstream.map((request) => request.method)).toContain("GET")
        expect(resumedUpstream.every((request) => !String(request.headers["last-event-id"]).startsWith("g1."))).toBe(
          true
        )

        const injected = yield* callTool(client, "long_report", { id: "injected" })
        expect(injected.isError).toBe(true)
        expect(injected.text).not.toContain(INJECTED_TEXT)
        expect(yield* sessionTraces(setup.owner, transport.sessionId!)).toEqual([
          { effect: "permit", kind: "output.proposed", operation: "long_report" },
          { effect: "rewrite", kind: "tool.result", operation: "long_report" },
          { effect: "permit", kind: "output.proposed", operation: "long_report" },
          { effect: "deny", kind: "tool.result", operation: "long_report" }
        ])

        // An id the gateway did not give (junk, too long), one changed, or one given for another server: 400.
        const other = yield* setup.owner.api.mcpServers.createMcpServer({
          payload: { display_name: "Other", url: resumable.url, agent_id: "mail-bot" }
        })
        const token = tokens[0]!
        const tampered = `${token.slice(0, 5)}${token[5] === "A" ? "B" : "A"}${token.slice(6)}`
        for (const [serverId, lastEventId] of [
          [setup.serverId, "42"],
          [setup.serverId, tampered],
          [setup.serverId, "g1.!!!.###"],
          [setup.serverId, `g1.${"x".repeat(5_000)}`],
          [other.id, token]
        ] as const) {
          const refused = yield* call(setup.base, "GET", `/v1/mcp/${serverId}`, {
            token: setup.key,
            headers: {
              accept: "text/event-stream",
              "mcp-session-id": transport.sessionId!,
              "last-event-id": lastEventId
            }
          })
          expect([refused.status, refused.body]).toMatchObject([
            400,
            { error: { code: "validation_failed", details: [{ path: "Last-Event-ID" }] } }
          ])
        }
      })
    )
  })
})
