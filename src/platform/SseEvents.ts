/**
 * Reading a server-sent event stream as it arrives, for the two relays that
 * screen one (the LLM gateway's StreamScreen and the MCP gateway's Relay).
 *
 * - Lines end in LF, CRLF or a lone CR (the SSE grammar). A CR closing a
 *   chunk waits for the next one: with an LF there it is one line end, not
 *   two (which would end an event early).
 * - Each chunk's text is searched once for blank lines (plus the one
 *   character before it): an event that arrives in many small chunks costs
 *   no rescans of what came before.
 * - An event is held only up to `maxEventBytes` (UTF-8), and no longer one
 *   is answered, even when it came whole in one chunk. A server that never
 *   sends a blank line (an event of endless short lines) is reported, not
 *   buffered without end.
 */
import { once } from "node:events"
import type { Writable } from "node:stream"
import { StringDecoder } from "node:string_decoder"

/** What one chunk completed: its events (each without its blank line), or the held event outgrew the bound. */
export type SseChunk = { readonly _tag: "events"; readonly events: Array<string> } | { readonly _tag: "too_long" }

export class SseEventSplitter {
  private readonly decoder = new StringDecoder("utf8")
  /** The unfinished event's text, in the pieces it came in (joined once it is complete). */
  private parts: Array<string> = []
  private heldBytes = 0
  private lastChar = ""
  private heldCR = false

  constructor(private readonly maxEventBytes: number) {}

  push(chunk: Uint8Array): SseChunk {
    return this.split(this.normalized(this.decoder.write(chunk)))
  }

  /** The rest once the body ended (an event without its blank line), or undefined when only blank lines were left. */
  end(): string | undefined {
    const text = this.normalized(this.decoder.end()) + (this.heldCR ? "\n" : "")
    this.heldCR = false
    const rest = (this.parts.join("") + text).replace(/\n+$/, "")
    this.parts = []
    return rest.trim() === "" ? undefined : rest
  }

  /** Past `maxEventBytes` in UTF-8 (a UTF-16 unit is 1 to 3 bytes: the byte count is taken only when it could be). */
  private outgrows(event: string) {
    return (
      event.length > this.maxEventBytes ||
      (event.length * 3 > this.maxEventBytes && Buffer.byteLength(event, "utf8") > this.maxEventBytes)
    )
  }

  private normalized(text: string) {
    const joined = (this.heldCR ? "\r" : "") + text
    this.heldCR = joined.endsWith("\r")
    return (this.heldCR ? joined.slice(0, -1) : joined).replace(/\r\n?/g, "\n")
  }

  private split(text: string): SseChunk {
    const events: Array<string> = []
    let start = 0
    // A blank line split across chunks: the held event ended with LF, this text starts with one.
    if (this.lastChar === "\n" && text.startsWith("\n") && this.parts.length > 0) {
      events.push(this.parts.join("").slice(0, -1))
      this.parts = []
      start = 1
    }
    let boundary = text.indexOf("\n\n", start)
    while (boundary >= 0) {
      const event = this.parts.join("") + text.slice(start, boundary)
      // An event that came whole in this chunk (e.g. one cut short by the usage meter, ended by its error event) is bounded too.
      if (this.outgrows(event)) return { _tag: "too_long" }
      events.push(event)
      this.parts = []
      start = boundary + 2
      boundary = text.indexOf("\n\n", start)
    }
    const rest = start === 0 ? text : text.slice(start)
    if (rest !== "") {
      // Counted from scratch after an event ended: the rest is then part of this chunk only.
      this.heldBytes = (this.parts.length === 0 ? 0 : this.heldBytes) + Buffer.byteLength(rest, "utf8")
      this.parts.push(rest)
      this.lastChar = rest[rest.length - 1]!
    } else if (this.parts.length === 0) {
      this.heldBytes = 0
      this.lastChar = ""
    }
    if (this.heldBytes > this.maxEventBytes) return { _tag: "too_long" }
    return { _tag: "events", events: events.filter((event) => event !== "") }
  }
}

/** Writes `text` to `out`, waiting for it to drain; false once `out` is gone. Leaves no listener behind. */
export const writeDrained = async (out: Writable, text: string) => {
  if (out.destroyed || out.writableEnded) return false
  if (text !== "" && !out.write(text)) {
    const controller = new AbortController()
    await Promise.race([
      once(out, "drain", { signal: controller.signal }),
      once(out, "close", { signal: controller.signal })
    ]).catch(() => undefined)
    controller.abort()
  }
  return !out.destroyed
}
