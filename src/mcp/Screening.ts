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
export const resultMessage = <A>(id: string | number, result: A) => ({ jsonrpc: "2.0", id, result })

/** A JSON-RPC error response (for a request the endpoint cannot pass on). */
export const errorMessage = (id: string | number | null, code: number, message: string) => ({
  jsonrpc: "2.0",
  id,
  error: { code, message }
})

/** The findings' reasons (with their policies), or the decision's own reason when there are none. */
export const reasonsOf = (answer: DecisionAnswer) => {
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

const parsedObject = (text: string): Json | undefined => {
  try {
    return asObject(JSON.parse(text))
  } catch {
    return undefined
  }
}

/** The text an item of a tool result carries: a text item's, or an embedded text resource's. */
const itemText = (item: unknown): string | undefined => {
  const object = asObject(item)
  if (object?.["type"] === "text" && typeof object["text"] === "string") return object["text"]
  const resource = object?.["type"] === "resource" ? asObject(object["resource"]) : undefined
  return typeof resource?.["text"] === "string" ? resource["text"] : undefined
}

const contentOf = (result: Json): ReadonlyArray<unknown> =>
  Array.isArray(result["content"]) ? (result["content"] as ReadonlyArray<unknown>) : []

/**
 * What a tool result's `tool.result` decision screens, one part a line: its text items, the text of
 * its embedded resources, and its `structuredContent` as JSON. Binary items (images, audio, blob
 * resources) carry no text to screen and pass as they are.
 */
export const textOf = (result: Json): string => {
  const texts = contentOf(result).flatMap((item) => {
    const text = itemText(item)
    return text === undefined ? [] : [text]
  })
  if (result["structuredContent"] !== undefined) texts.push(JSON.stringify(result["structuredContent"]))
  return texts.join("\n")
}

/**
 * A tool result after its decision: unchanged on permit; on rewrite everything that was screened
 * (text items, text resources, structured content) becomes one text item with the transformed text,
 * binary items kept after it; on deny or defer a notice instead of the whole result.
 */
export const screenedResult = (tool: string, result: Json, answer: DecisionAnswer): Json | undefined => {
  switch (answer.effect) {
    case "permit":
      return undefined
    case "rewrite": {
      const transformed = answer.transformed_value ?? ""
      const others = contentOf(result).filter((item) => itemText(item) === undefined)
      const { structuredContent, ...rest } = result
      if (structuredContent === undefined) return { ...rest, content: [{ type: "text", text: transformed }, ...others] }
      // Structured content is the last line screened (textOf): put back rewritten while it is still a JSON object.
      const cut = transformed.lastIndexOf("\n")
      const structured = parsedObject(transformed.slice(cut + 1))
      if (structured === undefined) {
        // Not separable again: the rewritten text alone, marked as an error (a client checking an output schema accepts that).
        return { ...rest, content: [{ type: "text", text: transformed }, ...others], isError: true }
      }
      const text = cut < 0 ? JSON.stringify(structured) : transformed.slice(0, cut)
      return { ...rest, content: [{ type: "text", text }, ...others], structuredContent: structured }
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

/** Why a decision withheld something, for whoever reads the notice: the reasons, the approval a defer waits for, the trace. */
export const withheldReason = (answer: DecisionAnswer) =>
  answer.effect === "defer"
    ? `${reasonsOf(answer)} (pending approval, intent ${answer.intent_id}). Trace: ${answer.trace_id}.`
    : `${reasonsOf(answer)}. Trace: ${answer.trace_id}.`
