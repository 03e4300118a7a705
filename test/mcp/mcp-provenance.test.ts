/**
 * Provenance through the MCP gateway (docs/authorization.md, "Provenance
 * without labels"): a value a tool's result brought into an MCP session is
 * recognised when a later tool call carries it, with no labels from the
 * caller, and the call never reaches the server.
 */
import { afterAll, describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SERVER_OPTIONS, testServerWithDatabase } from "../support/TestServer.js"
import { GATEWAY_SETTINGS } from "../gateway/gateway-helpers.js"
import { callTool, connect, invocations, mcpTenant, sessionTraces } from "./mcp-helpers.js"
import { IBAN, startMcpUpstream } from "./mcp-upstream.js"

const sse = await startMcpUpstream()
afterAll(() => sse.close())

layer(testServerWithDatabase("database", GATEWAY_SETTINGS), SERVER_OPTIONS)("MCP gateway provenance", (it) => {
  describe("provenance", () => {
    it.scoped("an IBAN read from one tool's result cannot reach send_money, with no labels from the caller", () =>
      Effect.gen(function* () {
        const setup = yield* mcpTenant(sse.url)
        const { owner } = setup
        yield* owner.api.toolMetadata.upsertToolMetadata({
          payload: { tool: "read_email", reversible: true, side_effect: "none", result_origin: "email" }
        })
        yield* owner.api.toolMetadata.upsertToolMetadata({
          payload: {
            tool: "send_money",
            reversible: false,
            side_effect: "payment",
            params: [
              {
                path: "iban",
                role: "authority_bearing",
                allowed_sources: [{ kind: "input", origin: "user", source_id: "*" }]
              }
            ]
          }
        })
        yield* owner.api.settings.updateSettings({ payload: { param_checker_mode: "enforce" } })
        const { client, transport } = yield* connect(setup)
        const email = yield* callTool(client, "read_email", { id: "inbox-1" })
        expect(email.text).toContain(IBAN)
        const before = invocations(sse, "send_money")
        // The same number, spaced differently, as a model would copy it.
        const sent = yield* callTool(client, "send_money", { iban: IBAN.replaceAll(" ", ""), amount: 900 })
        expect(sent.isError).toBe(true)
        expect(sent.text).toContain('origin "email"')
        expect(invocations(sse, "send_money")).toBe(before)
        expect(yield* sessionTraces(owner, transport.sessionId!)).toEqual([
          { effect: "permit", kind: "output.proposed", operation: "read_email" },
          { effect: "permit", kind: "tool.result", operation: "read_email" },
          { effect: "deny", kind: "output.proposed", operation: "send_money" }
        ])
        // Another session never saw that e-mail: there the value has no origin at all, not email.
        const other = yield* connect(setup)
        const fresh = yield* callTool(other.client, "send_money", { iban: IBAN.replaceAll(" ", ""), amount: 900 })
        expect(fresh.text).not.toContain('origin "email"')
        expect(fresh.text).toContain("no source label")
      })
    )
  })
})
