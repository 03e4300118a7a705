/**
 * What the MCP gateway screens of a server's requests to the client, and
 * what the client receives after a rewrite (src/mcp/ServerRequests.ts).
 */
import { describe, expect, it } from "vitest"
import {
  answerAction,
  clientAnswerOf,
  requestText,
  rewrittenAnswer,
  rewrittenParams,
  serverRequestOf
} from "../../src/mcp/ServerRequests.js"

const sampling = (params: Record<string, unknown>) =>
  serverRequestOf({ jsonrpc: "2.0", id: 7, method: "sampling/createMessage", params })!

describe("server requests", () => {
  it("only sampling and elicitation requests with an id are screened", () => {
    expect(serverRequestOf({ jsonrpc: "2.0", id: 1, method: "roots/list" })).toBeUndefined()
    expect(serverRequestOf({ jsonrpc: "2.0", method: "sampling/createMessage", params: {} })).toBeUndefined()
    expect(serverRequestOf({ jsonrpc: "2.0", id: 1, result: {} })).toBeUndefined()
    expect(serverRequestOf({ jsonrpc: "2.0", id: "e", method: "elicitation/create" })).toMatchObject({
      id: "e",
      params: {}
    })
  })

  it("sampling: the system prompt, then every text block, tool results' text included; images carry none", () => {
    const request = sampling({
      systemPrompt: "Be brief.",
      messages: [
        { role: "user", content: { type: "text", text: "first\nsecond" } },
        { role: "user", content: { type: "image", data: "AAAA", mimeType: "image/png" } },
        {
          role: "user",
          content: [
            { type: "tool_result", toolUseId: "t1", content: [{ type: "text", text: "from a tool" }] },
            { type: "text", text: "last" }
          ]
        }
      ]
    })
    expect(requestText(request)).toBe("Be brief.\nfirst\nsecond\nfrom a tool\nlast")
  })

  it("a rewrite that keeps the lines goes back part by part; one that does not is the first part alone", () => {
    const request = sampling({
      systemPrompt: "Be brief.",
      messages: [
        { role: "user", content: { type: "text", text: "IBAN DE89\nthanks" } },
        { role: "assistant", content: { type: "text", text: "noted" } }
      ],
      maxTokens: 10
    })
    expect(rewrittenParams(request, "Be brief.\nIBAN [removed]\nthanks\nnoted")).toEqual({
      systemPrompt: "Be brief.",
      messages: [
        { role: "user", content: { type: "text", text: "IBAN [removed]\nthanks" } },
        { role: "assistant", content: { type: "text", text: "noted" } }
      ],
      maxTokens: 10
    })
    expect(rewrittenParams(request, "[all removed]")).toEqual({
      systemPrompt: "[all removed]",
      messages: [
        { role: "user", content: { type: "text", text: "" } },
        { role: "assistant", content: { type: "text", text: "" } }
      ],
      maxTokens: 10
    })
    // The request itself is left as it was.
    expect(requestText(request)).toBe("Be brief.\nIBAN DE89\nthanks\nnoted")
  })

  it("elicitation: the question and, for a URL elicitation, the address", () => {
    const request = serverRequestOf({
      jsonrpc: "2.0",
      id: 3,
      method: "elicitation/create",
      params: { mode: "url", message: "Sign in", url: "https://example.test/login", elicitationId: "x" }
    })!
    expect(requestText(request)).toBe("Sign in\nhttps://example.test/login")
    expect(rewrittenParams(request, "Sign in\n[link removed]")).toMatchObject({
      message: "Sign in",
      url: "[link removed]"
    })
  })

  it("the client's answers: a sampled reply's text and an accepted form's answers are screened; others pass", () => {
    const reply = clientAnswerOf({
      jsonrpc: "2.0",
      id: 7,
      result: { model: "m", role: "assistant", content: { type: "text", text: "key sk-1" } }
    })!
    expect(answerAction(reply)).toEqual({ operation: "sampling/createMessage", content: "key sk-1" })
    expect(rewrittenAnswer(reply, "key [key]")).toEqual({
      jsonrpc: "2.0",
      id: 7,
      result: { model: "m", role: "assistant", content: { type: "text", text: "key [key]" } }
    })
    const form = clientAnswerOf({ jsonrpc: "2.0", id: "f", result: { action: "accept", content: { pin: "1234" } } })!
    expect(answerAction(form)).toEqual({ operation: "elicitation/create", params: { pin: "1234" } })
    // A form's answers are not edited: a rewrite withholds them.
    expect(rewrittenAnswer(form, "[pin]")).toBeUndefined()
    expect(clientAnswerOf({ jsonrpc: "2.0", id: "f", result: { action: "decline" } })).toBeUndefined()
    expect(clientAnswerOf({ jsonrpc: "2.0", id: 1, result: { roots: [] } })).toBeUndefined()
    expect(clientAnswerOf({ jsonrpc: "2.0", id: 1, error: { code: -1, message: "no" } })).toBeUndefined()
  })
})
