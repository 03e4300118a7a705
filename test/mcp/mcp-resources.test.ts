/**
 * Resources and prompts through the MCP gateway (docs/mcp.md, "What is
 * decided"): what `resources/read` and `prompts/get` answer enters the
 * model's context as a tool result does, so it is decided as one: passed,
 * rewritten part by part, or withheld with an error the SDK client raises.
 * What they send (a URI, a prompt's name and arguments) may carry data out
 * as a tool call's arguments do: decided first, as `output.proposed`, and
 * refused with an error before the server sees it.
 */
import { afterAll, describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SERVER_OPTIONS, testServerWithDatabase } from "../support/TestServer.js"
import { GATEWAY_SETTINGS } from "../gateway/gateway-helpers.js"
import { createPolicy } from "../support/Events.js"
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

          const sent = (operation: string) => ({ effect: "permit", kind: "output.proposed", operation })
          expect(yield* sessionTraces(setup.owner, transport.sessionId!)).toEqual([
            sent("resources/read"),
            { effect: "rewrite", kind: "tool.result", operation: "resources/read" },
            sent("resources/read"),
            { effect: "deny", kind: "tool.result", operation: "resources/read" },
            sent("prompts/get"),
            { effect: "rewrite", kind: "tool.result", operation: "prompts/get" },
            sent("prompts/get"),
            { effect: "deny", kind: "tool.result", operation: "prompts/get" }
          ])
        })
      )
      it.scoped("what they send is decided first: a refused read or prompt never reaches the server", () =>
        Effect.gen(function* () {
          const setup = yield* mcpTenant(sse.url)
          yield* createPolicy(setup.base, setup.owner, "no-injected-reads", {
            value: "injected",
            target: "params.uri",
            appliesTo: ["output.proposed"]
          })
          yield* createPolicy(setup.base, setup.owner, "no-reply-prompts", {
            value: "reply_to",
            target: "params.name",
            appliesTo: ["output.proposed"]
          })
          const { client, transport } = yield* connect(setup)
          // Messages POSTed upstream (the client's own event stream is a GET it may open at any time).
          const posted = () => sse.requests.filter((request) => request.method === "POST").length
          const before = posted()
          const read = yield* failureOf(() => client.readResource({ uri: "mail://inbox/injected" }))
          expect(read).toContain("did not let this resources/read request out (deny)")
          expect(read).toContain("no-injected-reads")
          const prompt = yield* failureOf(() => client.getPrompt({ name: "reply_to", arguments: { id: "m-1" } }))
          expect(prompt).toContain("did not let this prompts/get request out (deny)")
          // Neither went to the server (before, both did, decided only on what came back).
          expect(posted()).toBe(before)
          expect(yield* sessionTraces(setup.owner, transport.sessionId!)).toEqual([
            { effect: "deny", kind: "output.proposed", operation: "resources/read" },
            { effect: "deny", kind: "output.proposed", operation: "prompts/get" }
          ])
        })
      )
    })
  }
)
