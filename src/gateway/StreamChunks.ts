/**
 * The parts of a chat-style stream chunk that StreamScreen.ts decides, in
 * whatever shape the provider sent them: one choice or several, the role on
 * every chunk (Ollama), usage on every chunk (vLLM's continuous usage), the
 * last text in the chunk that carries the finish reason, text and tool calls
 * in one delta, the legacy `function_call`, content as a list of parts. The
 * reply text and tool call pieces are taken out (screened, then released as
 * the screen's own events); whatever else the chunk carries (a finish
 * reason, another delta field) is a chunk of its own, written after them.
 */

type Json = Record<string, unknown>

const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value)

/** What the screen takes out of a delta: its text and tool calls (and the legacy `function_call`), and the role. */
const SCREENED_KEYS = new Set(["content", "tool_calls", "function_call", "role"])

/** The piece index of a legacy `function_call` (one per choice), among a choice's tool call pieces. */
export const LEGACY_CALL = "function_call"

export interface ChatText {
  readonly index: number
  readonly text: string
  /** The delta's role, if it carried one (written with the released text). */
  readonly role: unknown
}

export interface ChatCalls {
  readonly index: number
  readonly pieces: ReadonlyArray<Json>
  /** The chunk written with only these pieces (the chunk as sent when it carried nothing else). */
  readonly event: string
}

export interface ChatParts {
  readonly texts: ReadonlyArray<ChatText>
  readonly calls: ReadonlyArray<ChatCalls>
  /** The chunk without its text and tool calls when it carries more (a finish reason, another delta field). */
  readonly rest: string | undefined
  /** Usage that came with text or tool calls and nothing else (written at once: it is not text). */
  readonly usage: string | undefined
  /** The chunk's envelope (id, model, ...) without choices or usage, for the events written in its place. */
  readonly envelope: Json
}

const isTextPart = (part: unknown): part is Json =>
  isObject(part) && part["type"] === "text" && typeof part["text"] === "string"

/**
 * A delta's reply text: its `content` string, or the text parts of a list of parts (Mistral's reasoning
 * models stream one), whose other parts (thinking, like Anthropic's, is not decided) go on as they came.
 */
const contentOf = (
  content: unknown
): { readonly text: string; readonly otherParts: ReadonlyArray<unknown> | undefined } => {
  if (typeof content === "string") return { text: content, otherParts: undefined }
  if (!Array.isArray(content)) return { text: "", otherParts: undefined }
  const others = content.filter((part) => !isTextPart(part))
  return {
    text: content
      .filter(isTextPart)
      .map((part) => String(part["text"]))
      .join(""),
    otherParts: others.length > 0 ? others : undefined
  }
}

const dataEvent = (value: unknown) => `data: ${JSON.stringify(value)}\n\n`

/**
 * A chunk's text and tool calls, and what else it carries; undefined when it carries neither text nor tool calls
 * (a role alone, a finish reason, usage, [DONE]), which the screen passes on after what is pending.
 */
export const chatParts = (raw: string, data: unknown): ChatParts | undefined => {
  if (!isObject(data) || !Array.isArray(data["choices"])) return undefined
  const { choices: _choices, usage, ...envelope } = data
  const choices = data["choices"].filter(isObject)
  const texts: Array<ChatText> = []
  const calls: Array<ChatCalls> = []
  const rest: Array<Json> = []
  for (const choice of choices) {
    const index = Number(choice["index"] ?? 0)
    const delta = isObject(choice["delta"]) ? choice["delta"] : {}
    const { text, otherParts } = contentOf(delta["content"])
    const hasText = text !== ""
    if (hasText) texts.push({ index, text, role: delta["role"] })
    const pieces = Array.isArray(delta["tool_calls"]) ? delta["tool_calls"].filter(isObject) : []
    const legacy = isObject(delta["function_call"]) ? delta["function_call"] : undefined
    const others = Object.keys(delta).filter((key) => !SCREENED_KEYS.has(key) && delta[key] != null)
    const more = choice["finish_reason"] != null || others.length > 0 || otherParts !== undefined
    const alone = choices.length === 1 && !hasText && !more && usage == null && (pieces.length === 0 || !legacy)
    const role = delta["role"] == null ? {} : { role: delta["role"] }
    const held = (field: Json, group: ReadonlyArray<Json>) => {
      const only = { index, delta: { ...role, ...field }, finish_reason: null }
      calls.push({ index, pieces: group, event: alone ? raw : dataEvent({ ...envelope, choices: [only] }) })
    }
    if (pieces.length > 0) held({ tool_calls: pieces }, pieces)
    if (legacy !== undefined) held({ function_call: legacy }, [{ index: LEGACY_CALL, function: legacy }])
    if (more) {
      const remaining = Object.fromEntries([
        ...others.map((key) => [key, delta[key]]),
        ...(otherParts === undefined ? [] : [["content", otherParts]])
      ])
      // Log probabilities name the tokens of the text taken out: they go with it, never around the screen.
      const { logprobs: _logprobs, ...kept } = choice
      rest.push({ ...(hasText ? kept : choice), delta: remaining })
    }
  }
  if (texts.length === 0 && calls.length === 0) return undefined
  const withUsage = usage == null ? {} : { usage }
  return {
    texts,
    calls,
    rest: rest.length > 0 ? dataEvent({ ...envelope, choices: rest, ...withUsage }) : undefined,
    usage: rest.length === 0 && usage != null ? dataEvent({ ...envelope, choices: [], usage }) : undefined,
    envelope
  }
}

/** A chat tool call (or legacy function call) written whole with rewritten arguments, in its first chunk's envelope. */
export const chatCallEvent = (envelope: Json, index: number, piece: Json, name: string, args: string) => {
  const delta =
    piece["index"] === LEGACY_CALL
      ? { function_call: { name, arguments: args } }
      : {
          tool_calls: [
            { index: piece["index"] ?? 0, id: piece["id"], type: "function", function: { name, arguments: args } }
          ]
        }
  return dataEvent({ ...envelope, choices: [{ index, delta, finish_reason: null }] })
}

/** A chat text event for the released `text` of choice `index` (with the role its first chunk carried). */
export const chatTextEvent = (envelope: Json, index: number, role: unknown) => (text: string) =>
  text === ""
    ? ""
    : dataEvent({
        ...envelope,
        choices: [{ index, delta: role == null ? { content: text } : { role, content: text }, finish_reason: null }]
      })
