/**
 * What an MCP server asks of the client, through the gateway (docs/mcp.md,
 * "What is decided"): the official SDK server asks the client's model
 * (`sampling/createMessage`) and its user (`elicitation/create`) during a
 * tool call; the official SDK client answers. Each request is decided as
 * a tool result: passed, rewritten before the client sees it, or withheld,
 * the server then reading the gateway's error instead of waiting.
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { CreateMessageRequestSchema, ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js"
import { afterAll, describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { createPolicy } from "../support/Events.js"
import { SERVER_OPTIONS, testServerWithDatabase } from "../support/TestServer.js"
import { GATEWAY_SETTINGS } from "../gateway/gateway-helpers.js"
import { callTool, connect, mcpTenant, redactIban, type Setup, sessionTraces } from "./mcp-helpers.js"
import { EMAIL_TEXT, IBAN, INJECTED_TEXT, startMcpUpstream, SUMMARY_PROMPT } from "./mcp-upstream.js"

const sse = await startMcpUpstream()
afterAll(() => sse.close())

const SUMMARY = "A one-line summary."
const QUESTION = "Confirm the transfer of 900 EUR?"

/** A client whose model answers sampling with `reply` and whose user confirms elicitations, recording what each was shown. */
const askedClient = (setup: Setup, reply = SUMMARY) => {
  const prompts: Array<string> = []
  const questions: Array<string> = []
  const prepare = (client: Client) => {
    client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
      const texts = request.params.messages.flatMap((message) =>
        (Array.isArray(message.content) ? message.content : [message.content]).map((block) =>
          block.type === "text" ? block.text : ""
        )
      )
      prompts.push([request.params.systemPrompt ?? "", ...texts].join("\n"))
      return { model: "stub-model", role: "assistant" as const, content: { type: "text" as const, text: reply } }
    })
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      questions.push(request.params.message)
      return { action: "accept" as const, content: { confirm: true } }
    })
  }
  return Effect.map(connect(setup, { sampling: {}, elicitation: { form: {} } }, prepare), (connection) => ({
    ...connection,
    prompts,
    questions
  }))
}

layer(testServerWithDatabase("database", GATEWAY_SETTINGS), SERVER_OPTIONS)("MCP gateway: server requests", (it) => {
  describe("sampling and elicitation", () => {
    it.scoped("pass when permitted, each decided as a tool result of its own", () =>
      Effect.gen(function* () {
        const setup = yield* mcpTenant(sse.url)
        const { client, transport, prompts, questions } = yield* askedClient(setup)
        expect(yield* callTool(client, "summarize", { body: EMAIL_TEXT })).toEqual({ text: SUMMARY, isError: false })
        expect(prompts).toEqual([`${SUMMARY_PROMPT}\n${EMAIL_TEXT}`])
        const confirmed = yield* callTool(client, "confirm_transfer", { question: QUESTION })
        expect(confirmed).toEqual({ text: "elicitation: accept", isError: false })
        expect(questions).toEqual([QUESTION])
        expect(yield* sessionTraces(setup.owner, transport.sessionId!)).toEqual([
          { effect: "permit", kind: "output.proposed", operation: "summarize" },
          { effect: "permit", kind: "tool.result", operation: "sampling/createMessage" },
          { effect: "permit", kind: "output.proposed", operation: "sampling/createMessage" },
          { effect: "permit", kind: "tool.result", operation: "summarize" },
          { effect: "permit", kind: "output.proposed", operation: "confirm_transfer" },
          { effect: "permit", kind: "tool.result", operation: "elicitation/create" },
          { effect: "permit", kind: "output.proposed", operation: "elicitation/create" },
          { effect: "permit", kind: "tool.result", operation: "confirm_transfer" }
        ])
      })
    )

    it.scoped("the client's answers reach the server screened: rewritten, or withheld with the server told", () =>
      Effect.gen(function* () {
        const setup = yield* mcpTenant(sse.url)
        yield* createPolicy(setup.base, setup.owner, "mask-key", {
          value: "sk-live-123",
          action: "rewrite",
          rewrite: "[key]"
        })
        yield* createPolicy(setup.base, setup.owner, "no-card-out", { value: "4111 1111 1111 1111" })
        const leaky = yield* askedClient(setup, "The key is sk-live-123.")
        const masked = yield* callTool(leaky.client, "summarize", { body: EMAIL_TEXT })
        expect(masked).toEqual({ text: "The key is [key].", isError: false })

        const carded = yield* askedClient(setup, "Pay with 4111 1111 1111 1111.")
        const refused = yield* callTool(carded.client, "summarize", { body: EMAIL_TEXT })
        expect(refused.isError).toBe(true)
        expect(refused.text).toContain("sampling refused")
        expect(refused.text).toContain("withheld the client's answer to this sampling request")
        expect(refused.text).toContain("no-card-out")
        expect(refused.text).not.toContain("4111")
        expect(yield* sessionTraces(setup.owner, carded.transport.sessionId!)).toContainEqual({
          effect: "deny",
          kind: "output.proposed",
          operation: "sampling/createMessage"
        })
      })
    )

    it.scoped("an injected instruction never reaches the client's model; the server reads why", () =>
      Effect.gen(function* () {
        const setup = yield* mcpTenant(sse.url)
        yield* createPolicy(setup.base, setup.owner, "no-injection", {
          value: "ignore previous instructions",
          appliesTo: ["tool.result"]
        })
        const { client, transport, prompts } = yield* askedClient(setup)
        const summary = yield* callTool(client, "summarize", { body: INJECTED_TEXT })
        expect(summary.isError).toBe(true)
        expect(summary.text).toContain("withheld")
        expect(summary.text).not.toContain(INJECTED_TEXT)
        expect(prompts).toEqual([])
        expect(yield* sessionTraces(setup.owner, transport.sessionId!)).toContainEqual({
          effect: "deny",
          kind: "tool.result",
          operation: "sampling/createMessage"
        })
      })
    )

    it.scoped(
      "a rewrite reaches the client rewritten, part by part; a withheld question is refused to the server",
      () =>
        Effect.gen(function* () {
          const setup = yield* mcpTenant(sse.url)
          yield* redactIban(setup)
          yield* createPolicy(setup.base, setup.owner, "no-credential-questions", {
            value: "password",
            appliesTo: ["tool.result"]
          })
          const { client, prompts, questions } = yield* askedClient(setup)
          expect(yield* callTool(client, "summarize", { body: EMAIL_TEXT })).toEqual({ text: SUMMARY, isError: false })
          // The system prompt stays the system prompt: the rewrite is put back part by part.
          expect(prompts).toEqual([`${SUMMARY_PROMPT}\n${EMAIL_TEXT.replace(IBAN, "[iban removed]")}`])

          const phishing = yield* callTool(client, "confirm_transfer", {
            question: "Type your bank password to confirm"
          })
          expect(phishing.isError).toBe(true)
          expect(phishing.text).toContain("elicitation refused")
          expect(phishing.text).toContain("withheld this elicitation request")
          expect(phishing.text).toContain("no-credential-questions")
          expect(questions).toEqual([])
        })
    )
  })
})
