/**
 * Screening a streamed answer (Guardrails.ts): the provider's SSE events
 * are read one at a time and passed on, except
 * - reply text, which is held and released in windows: at a sentence end,
 *   or once `windowChars` are pending, always keeping the last `holdChars`
 *   back. Each window decides all the pending text (the held-back tail
 *   included), so a pattern of up to `holdChars` split across chunks or
 *   windows is seen whole before any of it is released. A rewrite releases
 *   the transformed pending text at once;
 * - tool calls, whose events are held until the call is complete (its
 *   arguments assembled), decided, then released as they came.
 * Any other event first releases (decides) what is pending. A refusal ends
 * the stream with the dialect's error event. Reading waits for each write to
 * drain and for each decision, so backpressure reaches the provider.
 * What one answer can make the gateway hold or decide is bounded: one event,
 * or one tool call's held events, up to `maxEventBytes` (else
 * `sse_event_too_long`); at most MAX_SCREENED_ITEMS tool calls (else
 * `too_many_screened_items`), each ending the stream with the error event.
 */
import type { PassThrough, Readable } from "node:stream"
import { SseEventSplitter, writeDrained } from "../platform/SseEvents.js"
import { chatCallEvent, chatParts, chatTextEvent } from "./StreamChunks.js"
import { MAX_SCREENED_ITEMS, paramsOf, type Screened, toolCallEvent, unscreenableEvent } from "./GuardrailTexts.js"
import type { Dialect } from "./UsageMeter.js"

/** What deciding one event answered: go on (with a rewritten text when enforced), or stop with this error event. */
export type Verdict =
  { readonly _tag: "pass"; readonly rewritten: string | null } | { readonly _tag: "stop"; readonly event: string }

export interface StreamScreenOptions {
  readonly dialect: Dialect
  readonly windowChars: number
  readonly holdChars: number
  /** Whether reply text / tool calls are decided at all (a route's `off`). */
  readonly screensText: boolean
  readonly screensToolCalls: boolean
  readonly decide: (screened: Screened) => Promise<Verdict>
  /** The most of one event, or of one tool call's events held until it is complete (GATEWAY_SSE_MAX_LINE_BYTES). */
  readonly maxEventBytes: number
  /** The event that ends a stream that was not refused (the decisions made on it). */
  readonly finalEvent: () => string
}

type Json = Record<string, unknown>

const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value)

/** Reply text not yet released, and how to write a piece of it as the dialect's event. */
interface TextSlot {
  pending: string
  readonly event: (text: string) => string
}

/** A tool call being assembled, its events held until it is decided, and how to write it whole with rewritten arguments. */
interface HeldCall {
  name: string
  args: string
  events: Array<string>
  /** What its held events weigh (UTF-16 units), against `maxEventBytes`. */
  held: number
  readonly rewritten: (call: HeldCall, args: string) => Array<string>
}

/** The end of the last sentence in `text` at or before `limit` (0: none). */
const sentenceEnd = (text: string, limit: number) => {
  for (let i = limit; i > 0; i--) {
    const char = text[i - 1]
    if (char === "\n" || ((char === "." || char === "!" || char === "?") && (i === text.length || /\s/.test(text[i]!))))
      return i
  }
  return 0
}

/** Reads `source` (the provider's SSE answer) into `sink`, screened; never throws (a failure ends the sink). */
export const screenStream = async (source: Readable, sink: PassThrough, options: StreamScreenOptions) => {
  const { dialect } = options
  const slots = new Map<string, TextSlot>()
  /** Tool calls by slot (chat: choice and call index; messages: block index), in order of arrival. */
  const calls = new Map<string, HeldCall>()
  let stopped = false
  /** Tool calls seen: past MAX_SCREENED_ITEMS the answer is not screened further (each would be a decision). */
  let callsSeen = 0

  const write = (text: string) => writeDrained(sink, text)
  const stop = (event: string) => {
    stopped = true
    if (!sink.writableEnded && !sink.destroyed) sink.end(event)
    source.destroy()
  }
  const tooLong = (what: string) =>
    stop(
      unscreenableEvent(
        dialect,
        "sse_event_too_long",
        `The provider sent ${what} longer than ${options.maxEventBytes} bytes (GATEWAY_SSE_MAX_LINE_BYTES); the gateway ended the stream.`
      )
    )
  /** A new tool call: false (the stream stopped) once there are more than can be screened. */
  const admitCall = () => {
    callsSeen += 1
    if (!options.screensToolCalls || callsSeen <= MAX_SCREENED_ITEMS) return true
    stop(
      unscreenableEvent(
        dialect,
        "too_many_screened_items",
        `The provider's answer proposes more than ${MAX_SCREENED_ITEMS} tool calls, more than the route's guardrails screen in one answer; the gateway ended the stream.`
      )
    )
    return false
  }
  /** Holds one more event of `call`; false (the stream stopped) once the call outgrew the bound. */
  const hold = (call: HeldCall, raw: string) => {
    call.events.push(raw)
    call.held += raw.length
    if (call.held <= options.maxEventBytes) return true
    tooLong("a tool call")
    return false
  }

  /** Releases what a window of `slot` allows (`final`: all of it), deciding the pending text first. */
  const release = async (slot: TextSlot, final: boolean) => {
    const text = slot.pending
    if (text === "") return
    let cut = text.length
    if (!final) {
      const limit = text.length - options.holdChars
      if (limit <= 0) return
      cut = sentenceEnd(text, limit)
      if (cut === 0) {
        if (text.length < options.windowChars) return
        cut = limit
      }
    }
    if (!options.screensText) {
      slot.pending = text.slice(cut)
      return write(slot.event(text.slice(0, cut)))
    }
    const verdict = await options.decide({
      kind: "output.proposed",
      direction: "output",
      operation: "reply",
      content: text
    })
    if (verdict._tag === "stop") return stop(verdict.event)
    if (verdict.rewritten !== null) {
      slot.pending = ""
      return write(slot.event(verdict.rewritten))
    }
    slot.pending = text.slice(cut)
    return write(slot.event(text.slice(0, cut)))
  }

  const releaseAll = async () => {
    for (const slot of slots.values()) {
      await release(slot, true)
      if (stopped) return
    }
  }

  /** Decides complete tool calls (all before any is released: a chat chunk may carry pieces of several). */
  const releaseCalls = async (keys: ReadonlyArray<string> = [...calls.keys()]) => {
    const ready = keys.flatMap((key) => {
      const call = calls.get(key)
      calls.delete(key)
      return call === undefined ? [] : [call]
    })
    if (options.screensToolCalls) {
      for (const call of ready) {
        const verdict = await options.decide(toolCallEvent(call.name, call.args))
        if (verdict._tag === "stop") return stop(verdict.event)
        if (verdict.rewritten !== null) call.events = call.rewritten(call, verdict.rewritten)
      }
    }
    for (const call of ready) for (const event of call.events) await write(event)
  }

  /** Text added to a slot; a window released when it allows. */
  const addText = (key: string, text: string, event: (text: string) => string) => {
    const slot = slots.get(key) ?? { pending: "", event }
    slots.set(key, slot)
    slot.pending += text
    return release(slot, false)
  }

  /** What comes after what is pending: released (decided) first, so the order of the stream is kept. */
  const after = async (event: string) => {
    await releaseAll()
    if (!stopped) await releaseCalls()
    if (!stopped) await write(event)
  }

  const chatEvent = async (raw: string, data: unknown) => {
    const parts = chatParts(raw, data)
    // Neither text nor tool calls (a role, a finish reason, usage, [DONE]): after what is pending.
    if (parts === undefined) return after(raw)
    for (const { index, pieces, event } of parts.calls) {
      // Held with the first call it names; all its pieces are released together once complete.
      let held: HeldCall | undefined
      for (const piece of pieces) {
        const key = `${index}:${String(piece["index"] ?? 0)}`
        let call = calls.get(key)
        if (call === undefined) {
          if (!admitCall()) return
          call = {
            name: "",
            args: "",
            events: [],
            held: 0,
            rewritten: (assembled, args) => [chatCallEvent(parts.envelope, index, piece, assembled.name, args)]
          }
          calls.set(key, call)
        }
        const fn = isObject(piece["function"]) ? piece["function"] : {}
        if (typeof fn["name"] === "string") call.name += fn["name"]
        if (typeof fn["arguments"] === "string") call.args += fn["arguments"]
        held ??= call
      }
      if (!hold(held!, event)) return
    }
    for (const { index, role, text } of parts.texts) {
      await addText(`chat:${index}`, text, chatTextEvent(parts.envelope, index, role))
      if (stopped) return
    }
    // A finish reason (or another field) that came with them goes after them; usage alone needs no release.
    if (parts.rest !== undefined) return after(parts.rest)
    if (parts.usage !== undefined) await write(parts.usage)
  }

  const messagesEvent = async (raw: string, data: unknown) => {
    const type = isObject(data) ? data["type"] : undefined
    const index = isObject(data) ? Number(data["index"] ?? 0) : 0
    const key = `block:${index}`
    const textEvent = (text: string) =>
      text === ""
        ? ""
        : `event: content_block_delta\ndata: ${JSON.stringify({ type: "content_block_delta", index, delta: { type: "text_delta", text } })}\n\n`
    if (isObject(data) && type === "content_block_start") {
      const block = isObject(data["content_block"]) ? data["content_block"] : {}
      const start = (emptied: Json) =>
        `event: content_block_start\ndata: ${JSON.stringify({ ...data, content_block: { ...block, ...emptied } })}\n\n`
      if (block["type"] === "tool_use") {
        if (!admitCall()) return
        // Input the start carries (a provider may send it whole there) is decided with any deltas that follow.
        const input = block["input"]
        calls.set(key, {
          name: typeof block["name"] === "string" ? block["name"] : "",
          args: isObject(input) && Object.keys(input).length > 0 ? JSON.stringify(input) : "",
          events: [raw],
          held: raw.length,
          rewritten: (_call, args) => [
            start({ input: {} }),
            `event: content_block_delta\ndata: ${JSON.stringify({ type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: JSON.stringify(paramsOf(args)) } })}\n\n`,
            `event: content_block_stop\ndata: ${JSON.stringify({ type: "content_block_stop", index })}\n\n`
          ]
        })
        return
      }
      if (block["type"] === "text" && typeof block["text"] === "string" && block["text"] !== "") {
        // Text the start carries goes out as the deltas' does: the start empty, the text screened.
        await after(start({ text: "" }))
        return stopped ? undefined : addText(key, block["text"], textEvent)
      }
    }
    const held = calls.get(key)
    if (held !== undefined && (type === "content_block_delta" || type === "content_block_stop")) {
      const delta = isObject(data) ? data["delta"] : undefined
      if (isObject(delta) && typeof delta["partial_json"] === "string") held.args += delta["partial_json"]
      if (!hold(held, raw)) return
      return type === "content_block_stop" ? releaseCalls([key]) : undefined
    }
    if (isObject(data) && type === "content_block_delta") {
      const delta = data["delta"]
      if (isObject(delta) && delta["type"] === "text_delta" && typeof delta["text"] === "string") {
        return addText(key, delta["text"], textEvent)
      }
    }
    return after(raw)
  }

  /** One SSE event (with its blank line), by its `data`. */
  const onEvent = (raw: string) => {
    const data = raw
      .split("\n")
      .filter((line) => line.startsWith("data:"))
      .map((line) => line.slice(5).trimStart())
      .join("\n")
    let parsed: unknown
    try {
      parsed = data === "" || data === "[DONE]" ? undefined : JSON.parse(data)
    } catch {
      // Data that is not JSON cannot be screened (nor read by the SDKs): it is not passed on unseen.
      return stop(
        unscreenableEvent(dialect, "answer_not_screenable", "The provider sent a stream event that is not JSON.")
      )
    }
    return dialect === "chat" ? chatEvent(raw, parsed) : messagesEvent(raw, parsed)
  }

  // A client gone: stop reading (the proxy aborts the provider call when the response closes).
  sink.once("close", () => {
    stopped = true
    source.destroy()
  })
  const splitter = new SseEventSplitter(options.maxEventBytes)
  try {
    for await (const chunk of source) {
      const read = splitter.push(chunk as Buffer)
      if (read._tag === "too_long") {
        return tooLong("a stream event")
      }
      for (const event of read.events) {
        if (stopped) return
        await onEvent(`${event}\n\n`)
      }
      if (stopped) return
    }
    const rest = splitter.end()
    if (rest !== undefined) await onEvent(`${rest}\n\n`)
    if (!stopped) await releaseAll()
    if (!stopped) await releaseCalls()
    if (!stopped && !sink.writableEnded) sink.end(options.finalEvent())
  } catch {
    // The provider's answer broke off (or the client left): end what went out, as an unscreened proxy would.
    if (!sink.writableEnded && !sink.destroyed) sink.end()
  }
}
