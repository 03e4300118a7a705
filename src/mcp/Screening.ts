/**
 * The pure parts of the MCP endpoint: what a decided tool call answers
 * when it is not let through, how a tool result is replaced after its own
 * decision, and the tools a `tools/list` answer keeps.
 */
import type { DecisionAnswer } from "../authorization/Decisions.js"

type Json = Record<string, unknown>

export const asObject = (value: unknown): Json | undefined =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Json) : undefined

/** A tool result of one text item, marked as an error (what the agent reads instead of the real thing). */
export const noticeResult = (text: string) => ({ content: [{ type: "text", text }], isError: true })

/** A JSON-RPC response carrying `result`. */
export const resultMessage = (id: string | number, result: unknown) => ({ jsonrpc: "2.0", id, result })

/** A JSON-RPC error response (for a request the endpoint cannot pass on). */
export const errorMessage = (id: string | number | null, code: number, message: string) => ({
  jsonrpc: "2.0",
  id,
  error: { code, message }
})

const reasonsOf = (answer: DecisionAnswer) => {
  const reasons = [
    ...new Set(
      answer.findings.map((finding) =>
        finding.policy_id === null ? finding.reason : `${finding.reason} (policy ${finding.policy_id})`
      )
    )
  ]
  return reasons.length === 0 ? answer.reason : reasons.join("; ")
}

/** What the agent reads for a tool call the guardrail did not let through (deny, defer, or rewrite of arguments). */
export const callRefusal = (tool: string, answer: DecisionAnswer) => {
  switch (answer.effect) {
    case "defer":
      return noticeResult(
        `The guardrail deferred the call to ${tool} pending approval: ${reasonsOf(answer)}. ` +
          `Approval intent: ${answer.intent_id} (grant it with POST /v1/approvals/${answer.intent_id}/grant, then make the same call again). ` +
          `Trace: ${answer.trace_id}.`
      )
    case "rewrite":
      // A rewrite policy matched the arguments; the gateway does not edit arguments, so the call does not go out.
      return noticeResult(
        `The guardrail blocked the call to ${tool}: its arguments matched a rewrite policy (${reasonsOf(answer)}). Trace: ${answer.trace_id}.`
      )
    default:
      return noticeResult(`The guardrail denied the call to ${tool}: ${reasonsOf(answer)}. Trace: ${answer.trace_id}.`)
  }
}

/** A tool that is disabled in the workspace's tool metadata is neither listed nor called. */
export const disabledToolResult = (tool: string) =>
  noticeResult(`The tool ${tool} is disabled in this workspace's tool metadata; it cannot be called.`)

/** The text items of a tool result, one a line: what its `tool.result` decision screens. */
export const textOf = (result: Json): string => {
  const content = Array.isArray(result["content"]) ? (result["content"] as ReadonlyArray<unknown>) : []
  return content
    .map(asObject)
    .flatMap((item) =>
      item !== undefined && item["type"] === "text" && typeof item["text"] === "string" ? [item["text"]] : []
    )
    .join("\n")
}

/**
 * A tool result after its decision: unchanged on permit; on rewrite its text items become one item with
 * the transformed text (structured content, a copy of the unrewritten data, is dropped); on deny or defer
 * a notice instead of the whole result.
 */
export const screenedResult = (tool: string, result: Json, answer: DecisionAnswer): Json | undefined => {
  switch (answer.effect) {
    case "permit":
      return undefined
    case "rewrite": {
      const content = Array.isArray(result["content"]) ? (result["content"] as ReadonlyArray<unknown>) : []
      const others = content.filter((item) => asObject(item)?.["type"] !== "text")
      const { structuredContent: _dropped, ...rest } = result
      return { ...rest, content: [{ type: "text", text: answer.transformed_value ?? "" }, ...others] }
    }
    case "defer":
      return noticeResult(
        `The result of ${tool} was withheld by the guardrail pending review: ${reasonsOf(answer)}. Trace: ${answer.trace_id}.`
      )
    case "deny":
      return noticeResult(
        `The result of ${tool} was withheld by the guardrail: ${reasonsOf(answer)}. Trace: ${answer.trace_id}.`
      )
  }
}

/** A result that could not be decided (too large to screen, or the decision failed): withheld, fail closed. */
export const unscreenedResult = (tool: string, why: string) =>
  noticeResult(`The result of ${tool} was withheld: it could not be screened (${why}).`)

/** A `tools/list` result without the hidden tools. */
export const listedTools = (result: Json, hidden: ReadonlySet<string>): Json => {
  const tools = Array.isArray(result["tools"]) ? (result["tools"] as ReadonlyArray<unknown>) : []
  return { ...result, tools: tools.filter((tool) => !hidden.has(String(asObject(tool)?.["name"] ?? ""))) }
}
