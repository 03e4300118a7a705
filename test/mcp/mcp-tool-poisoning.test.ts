/**
 * Tool poisoning through the MCP gateway (docs/mcp.md, "What is decided"):
 * tool and parameter descriptions enter the model's context unseen, so a
 * `tools/list` answer is decided as a tool result. A tool whose description
 * hides instructions is left out of the list (the others stay usable); a
 * description a policy rewrites reaches the client rewritten.
 */
import { afterAll, describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SERVER_OPTIONS, testServerWithDatabase } from "../support/TestServer.js"
import { GATEWAY_SETTINGS } from "../gateway/gateway-helpers.js"
import { connect, mcpTenant, redactIban, screenContent, sessionTraces } from "./mcp-helpers.js"
import { POISONED_DESCRIPTION, startMcpUpstream } from "./mcp-upstream.js"

const sse = await startMcpUpstream()
afterAll(() => sse.close())

const ibanDescription = (tools: ReadonlyArray<{ name: string; inputSchema: unknown }>) =>
  (
    tools.find((tool) => tool.name === "send_money")?.inputSchema as {
      readonly properties: { readonly iban: { readonly description: string } }
    }
  ).properties.iban.description

layer(testServerWithDatabase("database", GATEWAY_SETTINGS), SERVER_OPTIONS)("MCP gateway: tool poisoning", (it) => {
  describe("tools/list", () => {
    it.scoped("leaves out a tool whose description hides instructions; the other tools stay listed", () =>
      Effect.gen(function* () {
        const setup = yield* mcpTenant(sse.url)
        yield* screenContent(setup)
        const { client, transport } = yield* connect(setup)
        const { tools } = yield* Effect.promise(() => client.listTools())
        const names = tools.map((tool) => tool.name)
        expect(names).not.toContain("lookup_customer")
        expect(names).toEqual(expect.arrayContaining(["lookup_order", "send_money", "read_email"]))
        expect(JSON.stringify(tools)).not.toContain("id_rsa")
        expect(yield* sessionTraces(setup.owner, transport.sessionId!)).toEqual([
          { effect: "deny", kind: "tool.result", operation: "tools/list" }
        ])
      })
    )

    it.scoped("passes descriptions a policy rewrites rewritten, part by part", () =>
      Effect.gen(function* () {
        const setup = yield* mcpTenant(sse.url)
        yield* redactIban(setup)
        const { client } = yield* connect(setup)
        const { tools } = yield* Effect.promise(() => client.listTools())
        expect(ibanDescription(tools)).toBe("The payee's IBAN, e.g. [iban removed]")
        // Each description kept its own place: the poisoned one is unchanged (no policy here finds it).
        expect(tools.find((tool) => tool.name === "lookup_customer")?.description).toBe(POISONED_DESCRIPTION)
        expect(tools.find((tool) => tool.name === "send_money")?.description).toBe("Sends money")
      })
    )
  })
})
