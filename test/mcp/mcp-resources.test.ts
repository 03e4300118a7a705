/**
 * Resources and prompts through the MCP gateway (docs/mcp.md, "What is
 * decided"): what `resources/read` and `prompts/get` answer enters the
 * model's context as a tool result does, so it is decided as one: passed,
 * rewritten part by part, or withheld with an error the SDK client raises.
 */
import { afterAll, describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SERVER_OPTIONS, testServerWithDatabase } from "../support/TestServer.js"
import { GATEWAY_SETTINGS } from "../gateway/gateway-helpers.js"
import { connect, mcpTenant, screenContent, sessionTraces } from "./mcp-helpers.js"
import { EMAIL_TEXT, IBAN, INJECTED_TEXT, startMcpUpstream } from "./mcp-upstream.js"

const sse = await startMcpUpstream()
afterAll(() => sse.close())

const REDACTED = EMAIL_TEXT.replace(IBAN, "[iban removed]")

/** The promise's error message, or "resolved". */
const failureOf = (attempt: () => Promise<unknown>) =>
  Effect.promise(() =>
    attempt().then(
      () => "resolved",
      (error: unknown) => (error instanceof Error ? error.message : String(error))
    )
  )

layer(testServerWithDatabase("database", GATEWAY_SETTINGS), SERVER_OPTIONS)(
  "MCP gateway: resources and prompts",
  (it) => {
    describe("resources/read and prompts/get", () => {
      it.scoped("are decided as tool results: rewritten, or withheld with an error the client raises", () =>
        Effect.gen(function* () {
          const setup = yield* mcpTenant(sse.url)
          yield* screenContent(setup)
          const { client, transport } = yield* connect(setup)
          const resource = yield* Effect.promise(() => client.readResource({ uri: "mail://inbox/latest" }))
          expect(resource.contents).toEqual([{ uri: "mail://inbox/latest", mimeType: "text/plain", text: REDACTED }])
          const refused = yield* failureOf(() => client.readResource({ uri: "mail://inbox/injected" }))
          expect(refused).toContain("The guardrail withheld this resource")
          expect(refused).toContain("no-injection")
          expect(refused).not.toContain(INJECTED_TEXT)

          const prompt = yield* Effect.promise(() => client.getPrompt({ name: "reply_to", arguments: { id: "m-1" } }))
          // The description keeps its own line: the rewrite went back part by part.
          expect(prompt.description).toBe("Reply to this e-mail")
          expect(prompt.messages).toEqual([{ role: "user", content: { type: "text", text: REDACTED } }])
          const refusedPrompt = yield* failureOf(() =>
            client.getPrompt({ name: "reply_to", arguments: { id: "injected" } })
          )
          expect(refusedPrompt).toContain("The guardrail withheld this prompt")

          expect(yield* sessionTraces(setup.owner, transport.sessionId!)).toEqual([
            { effect: "rewrite", kind: "tool.result", operation: "resources/read" },
            { effect: "deny", kind: "tool.result", operation: "resources/read" },
            { effect: "rewrite", kind: "tool.result", operation: "prompts/get" },
            { effect: "deny", kind: "tool.result", operation: "prompts/get" }
          ])
        })
      )
    })
  }
)
