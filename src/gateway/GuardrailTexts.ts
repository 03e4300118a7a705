/**
 * The pure parts of the gateway's guardrails (Guardrails.ts): what of a
 * provider request or answer is decided, in either dialect, how a rewritten
 * text is put back, and the dialect's own 403 body for a refusal.
 *
 * Request side: only what is new since the model last spoke is decided (the
 * latest user message, and tool results after the last assistant turn);
 * earlier turns were decided when they were new. Answer side: the reply's
 * text, and every tool call with its parsed arguments.
 */
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import type { EventKind } from "../authorization/Pipeline.js"
import { Limits } from "../platform/Schemas.js"
import type { Dialect } from "./UsageMeter.js"

/** Which route setting governs an event: the request, the reply, or a proposed tool call. */
export type Direction = "input" | "output" | "tool_calls"

/** One thing to decide, and (for text) how to put a rewritten text in its place, in the body it was read from. */
export interface Screened {
  readonly kind: EventKind
  readonly direction: Direction
  readonly operation: string
  readonly content?: string | undefined
  readonly params?: Readonly<Record<string, unknown>> | undefined
  readonly replace?: ((text: string) => void) | undefined
}

type Json = Record<string, unknown>

/**
 * The most things decided for one request, or one answer (its reply texts and tool calls): each is a decision
 * with its trace, so a body of thousands of tool calls or results is refused rather than decided one by one.
 * No model proposes anywhere near this many calls in one turn.
 */
export const MAX_SCREENED_ITEMS = 128

const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value)
const objects = (value: unknown): ReadonlyArray<Json> => (Array.isArray(value) ? value.filter(isObject) : [])

/** An operation is an identifier of bounded length (the event contract's); a longer tool name is cut. */
const operationName = (name: unknown, fallback: string) =>
  typeof name === "string" && name.trim() !== "" ? name.slice(0, Limits.identifier) : fallback

/**
 * The text a content part gives the model: a text part; messages style also a plain-text document (`source`
 * `text` or `content`) and a search result's content.
 */
const partText = (part: Json): string | undefined => {
  if (part["type"] === "text") return typeof part["text"] === "string" ? part["text"] : undefined
  const source = part["source"]
  if (part["type"] === "document" && isObject(source)) {
    if (source["type"] === "text") return typeof source["data"] === "string" ? source["data"] : undefined
    return source["type"] === "content" ? textOf(source["content"]) : undefined
  }
  return part["type"] === "search_result" ? textOf(part["content"]) : undefined
}

/** The text of a content value: a string, or the text of its parts/blocks joined (one a line). */
const textOf = (content: unknown): string | undefined => {
  if (typeof content === "string") return content
  const texts = objects(content).flatMap((part) => partText(part) ?? [])
  return texts.length === 0 ? undefined : texts.join("\n")
}

/** Puts `text` in place of the text parts of `holder[key]` (other parts, e.g. images, stay, after it). */
const replacer = (holder: Json, key: string) => (text: string) => {
  const content = holder[key]
  if (typeof content === "string" || !Array.isArray(content)) {
    holder[key] = text
    return
  }
  // Every part whose text was decided goes (documents too): the rewritten text stands for all of them.
  const others = content.filter((part) => !isObject(part) || partText(part) === undefined)
  holder[key] = [{ type: "text", text }, ...others]
}

/** A tool's output as `tool.result`, named by its tool (`name`, else `tool`), rewritable in place. */
const toolResultEvent = (name: unknown, output: string, holder: Json): Screened => ({
  kind: "tool.result",
  direction: "input",
  operation: operationName(name, "tool"),
  content: output,
  replace: replacer(holder, "content")
})

/** The tool name of the call `callId` answers, among the last assistant turn's calls. */
const nameOf = (names: ReadonlyMap<string, string>, callId: unknown) =>
  typeof callId === "string" ? names.get(callId) : undefined

const indexOfLast = (messages: ReadonlyArray<Json>, role: string) => {
  for (let i = messages.length - 1; i >= 0; i--) if (messages[i]!["role"] === role) return i
  return -1
}

/** Tool names of the last assistant turn's calls, by call id (a tool result names only the call). */
const toolNames = (dialect: Dialect, assistant: Json | undefined) => {
  const names = new Map<string, string>()
  if (assistant === undefined) return names
  if (dialect === "chat") {
    for (const call of objects(assistant["tool_calls"])) {
      const fn = call["function"]
      if (typeof call["id"] === "string" && isObject(fn) && typeof fn["name"] === "string") {
        names.set(call["id"], fn["name"])
      }
    }
  } else {
    for (const block of objects(assistant["content"])) {
      if (block["type"] === "tool_use" && typeof block["id"] === "string" && typeof block["name"] === "string") {
        names.set(block["id"], block["name"])
      }
    }
  }
  return names
}

/** What of a provider request is decided (the body is read, and rewritten in place by `replace`). */
export const requestEvents = (dialect: Dialect, body: Json): ReadonlyArray<Screened> => {
  const messages = objects(body["messages"])
  const lastAssistant = indexOfLast(messages, "assistant")
  const names = toolNames(dialect, messages[lastAssistant])
  const recent = messages.slice(lastAssistant + 1)
  const events: Array<Screened> = []
  const latestUser = indexOfLast(recent, "user")
  const user = recent[latestUser]
  const text = user === undefined ? undefined : textOf(user["content"])
  if (user !== undefined && text !== undefined) {
    events.push({
      kind: "input.received",
      direction: "input",
      operation: "user_message",
      content: text,
      replace: replacer(user, "content")
    })
  }
  for (const message of recent) {
    if (dialect === "chat") {
      const output = textOf(message["content"])
      if (output === undefined) continue
      if (message["role"] === "tool")
        events.push(toolResultEvent(nameOf(names, message["tool_call_id"]), output, message))
      // The deprecated `functions` API answers a function_call with a `function` message naming the function.
      if (message["role"] === "function") events.push(toolResultEvent(message["name"], output, message))
    } else if (message["role"] === "user") {
      for (const block of objects(message["content"])) {
        const output = textOf(block["content"])
        if (block["type"] !== "tool_result" || output === undefined) continue
        events.push(toolResultEvent(nameOf(names, block["tool_use_id"]), output, block))
      }
    }
  }
  return events
}

/** A tool call's arguments as params: the parsed JSON object, else the raw text under `arguments`. */
export const paramsOf = (raw: unknown): Json => {
  if (isObject(raw)) return raw
  if (raw === "") return {}
  if (typeof raw === "string") {
    try {
      const parsed: unknown = JSON.parse(raw)
      if (isObject(parsed)) return parsed
    } catch {
      // Not JSON: decided as the text it is.
    }
    return { arguments: raw }
  }
  return {}
}

/** A tool call's arguments as the text content policies read (and a rewrite redacts): the JSON as sent. */
export const argumentsText = (raw: unknown): string =>
  typeof raw === "string" ? raw : raw === undefined ? "{}" : JSON.stringify(raw)

/**
 * Rewritten arguments in the form the dialect carries them: chat keeps a JSON string; messages an
 * object (a rewrite that no longer parses as one is carried whole, never the unredacted input).
 */
export const rewrittenArguments = (dialect: Dialect, text: string): unknown => {
  if (dialect === "chat") return text
  return paramsOf(text)
}

/**
 * A proposed tool call as `output.proposed`: operation its name, params its parsed arguments and
 * content their text, so content policies see (and a rewrite redacts) what the tool would receive.
 */
export const toolCallEvent = (
  name: unknown,
  args: unknown,
  replace?: ((text: string) => void) | undefined
): Screened => ({
  kind: "output.proposed",
  direction: "tool_calls",
  operation: operationName(name, "tool"),
  params: paramsOf(args),
  content: argumentsText(args),
  replace
})

/** What of a provider's (non-streamed) JSON answer is decided: each reply text and each tool call. */
export const responseEvents = (dialect: Dialect, body: Json): ReadonlyArray<Screened> => {
  const events: Array<Screened> = []
  if (dialect === "chat") {
    for (const choice of objects(body["choices"])) {
      const message = choice["message"]
      if (!isObject(message)) continue
      const text = textOf(message["content"])
      if (text !== undefined && text !== "") {
        events.push({
          kind: "output.proposed",
          direction: "output",
          operation: "reply",
          content: text,
          replace: replacer(message, "content")
        })
      }
      for (const call of objects(message["tool_calls"])) {
        const fn = isObject(call["function"]) ? call["function"] : {}
        events.push(toolCallEvent(fn["name"], fn["arguments"], (text) => (fn["arguments"] = text)))
      }
      // The deprecated `functions` API proposes its call as `function_call`: a tool call all the same.
      const legacy = message["function_call"]
      if (isObject(legacy)) {
        events.push(toolCallEvent(legacy["name"], legacy["arguments"], (text) => (legacy["arguments"] = text)))
      }
    }
    return events
  }
  const text = textOf(body["content"])
  if (text !== undefined && text !== "") {
    events.push({
      kind: "output.proposed",
      direction: "output",
      operation: "reply",
      content: text,
      // Blocks keep their order: the rewritten text takes the first text block's place.
      replace: (rewritten) => {
        let placed = false
        body["content"] = objects(body["content"]).flatMap((block) => {
          if (block["type"] !== "text") return [block]
          if (placed) return []
          placed = true
          return [{ ...block, text: rewritten }]
        })
      }
    })
  }
  for (const block of objects(body["content"])) {
    if (block["type"] === "tool_use") {
      events.push(
        toolCallEvent(block["name"], block["input"], (text) => (block["input"] = rewrittenArguments(dialect, text)))
      )
    }
  }
  return events
}

/** What a refusal tells the client: why, and where to find the decision. */
export interface Refusal {
  readonly effect: "deny" | "defer"
  readonly reason: string
  readonly traceId: string
  readonly receiptId: string
  readonly findings: ReadonlyArray<unknown>
  readonly approval: unknown
  /** What was refused: the request, the reply, or a tool call (its name). */
  readonly subject: string
}

/** A guardrail error in the dialect's own error shape, with whatever the decision adds (`trace_id`, ...). */
const errorBody = (dialect: Dialect, message: string, details: Record<string, unknown>) =>
  dialect === "chat"
    ? { error: { message, type: "guardrail_error", param: null, ...details } }
    : { type: "error", error: { type: "permission_error", message, ...details } }

/** The body of a refusal: why, the code, and the decision (`trace_id`, `receipt_id`, `findings`, for defer `approval`). */
const refusalBody = (dialect: Dialect, refusal: Refusal) => {
  const code = refusal.effect === "deny" ? "guardrail_denied" : "guardrail_deferred"
  const verb = refusal.effect === "deny" ? "Denied" : "Held for approval"
  return errorBody(dialect, `${verb} by a guardrail (${code}) on ${refusal.subject}: ${refusal.reason}`, {
    code,
    trace_id: refusal.traceId,
    receipt_id: refusal.receiptId,
    findings: refusal.findings,
    approval: refusal.effect === "defer" ? refusal.approval : null
  })
}

/**
 * The 403 in the dialect's own error shape, as the official SDKs parse it: chat style
 * `{error: {message, type, code, param}}` (the openai client reads `code`); messages style
 * `{type: "error", error: {type, message}}` (the Anthropic client shows the body).
 */
export const refusalResponse = (dialect: Dialect, refusal: Refusal, headers: Record<string, string>) =>
  HttpServerResponse.unsafeJson(refusalBody(dialect, refusal), { status: 403, headers })

/** An error in a stream: the dialect's error event, after a blank line that ends any partial event sent. */
const errorEvent = (dialect: Dialect, body: unknown) =>
  dialect === "chat" ? `\n\ndata: ${JSON.stringify(body)}\n\n` : `\n\nevent: error\ndata: ${JSON.stringify(body)}\n\n`

/** A refusal mid-stream, as the event the SDKs raise as an error. */
export const refusalEvent = (dialect: Dialect, refusal: Refusal) => errorEvent(dialect, refusalBody(dialect, refusal))

/** A stream that could not be screened (the decision itself was refused), ended with its code. */
export const unscreenableEvent = (dialect: Dialect, code: string, message: string) =>
  errorEvent(dialect, errorBody(dialect, message, { code }))
