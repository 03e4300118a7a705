/**
 * Relaying an MCP server's answer to the client, message by message, so
 * each JSON-RPC message can be screened first. An SSE answer is passed on
 * event by event as it arrives (the next upstream chunk is read only once
 * the client took the previous events); a message the endpoint screens
 * waits for its decision, everything else goes on unchanged. The LLM
 * gateway's bounds apply: GATEWAY_SSE_MAX_LINE_BYTES for one unfinished
 * event, GATEWAY_MAX_STREAM_SECONDS for the whole stream, MAX_JSON_BYTES
 * for a JSON answer.
 */
import type { Readable } from "node:stream"
import { PassThrough } from "node:stream"
import { isScreenableObject, Limits } from "../platform/Schemas.js"
import { SseEventSplitter, writeDrained } from "../platform/SseEvents.js"

/** What becomes of one upstream message: passed on as sent, dropped, or replaced. */
export type Verdict = "keep" | "drop" | { readonly replace: unknown }

export interface RelayLimits {
  readonly maxStreamMillis: number
  readonly maxEventBytes: number
}

/**
 * The whole body, or undefined when it is larger than `limit` or not all there within `withinMillis` (the rest
 * is not read): a server trickling its answer cannot hold the call, and its slot, past the stream duration.
 */
export const readWhole = async (
  body: Readable,
  limit: number,
  withinMillis: number,
  stop?: AbortSignal
): Promise<Buffer | undefined> => {
  const chunks: Array<Buffer> = []
  let bytes = 0
  const deadline = setTimeout(() => body.destroy(new Error(`not read within ${withinMillis} ms`)), withinMillis)
  // Stopped from outside (the server deleted): the rest is not waited for.
  const stopped = () => body.destroy(new Error("stopped"))
  if (stop?.aborted === true) stopped()
  stop?.addEventListener("abort", stopped, { once: true })
  try {
    for await (const chunk of body) {
      const buffer = chunk as Buffer
      bytes += buffer.length
      if (bytes > limit) {
        body.destroy()
        return undefined
      }
      chunks.push(buffer)
    }
    return Buffer.concat(chunks, bytes)
  } finally {
    clearTimeout(deadline)
    stop?.removeEventListener("abort", stopped)
  }
}

const parseJson = (text: string): { readonly value: unknown } | undefined => {
  try {
    return { value: JSON.parse(text) as unknown }
  } catch {
    return undefined
  }
}

/** A JSON-RPC response (a result or an error). */
const isResponse = (message: unknown) =>
  typeof message === "object" &&
  message !== null &&
  !Array.isArray(message) &&
  ("result" in message || "error" in message)

/** One SSE event re-encoded with `message` as its data, keeping its other fields (`id`, `event`). */
const encodeEvent = (fields: ReadonlyArray<string>, message: unknown) =>
  `${fields.map((line) => `${line}\n`).join("")}data: ${JSON.stringify(message)}\n\n`

/** An end put to a relay from outside (its server deleted), and why, for the last message. */
export interface RelayStop {
  readonly signal: AbortSignal
  readonly reason: string
}

/**
 * Relays an SSE body through `screen`; `ending` gives the last message to send when the gateway ends the
 * stream itself (limits, `stop`), `done` runs once the relay is over (stream ended, cut, or client gone),
 * and `eventId` gives the id the client sees for each event id of the server (EventIds.ts).
 */
export const relaySse = (
  body: Readable,
  abort: () => void,
  screen: (message: unknown) => Promise<Verdict>,
  limits: RelayLimits,
  ending: (reason: string) => unknown,
  done: () => void,
  eventId: (id: string) => string = (id) => id,
  stop?: RelayStop
): PassThrough => {
  const out = new PassThrough()
  let finished = false
  const finish = () => {
    if (finished) return
    finished = true
    clearTimeout(deadline)
    stop?.signal.removeEventListener("abort", stopped)
    abort()
    done()
  }
  /** Ends the answer early: the last message says why, then the stream ends. */
  const cut = (reason: string) => {
    if (out.destroyed || out.writableEnded) return
    const last = ending(reason)
    out.end(last === undefined ? undefined : `\n\nevent: message\ndata: ${JSON.stringify(last)}\n\n`)
    finish()
  }
  const deadline = setTimeout(
    () =>
      cut(
        `The MCP server's stream lasted longer than ${limits.maxStreamMillis / 1000} s (GATEWAY_MAX_STREAM_SECONDS); the gateway ended it.`
      ),
    limits.maxStreamMillis
  )
  // A client that goes away ends the upstream request too.
  out.once("close", finish)
  const stopped = () => cut(stop?.reason ?? "")
  if (stop?.signal.aborted === true) queueMicrotask(stopped)
  else stop?.signal.addEventListener("abort", stopped, { once: true })
  // Whether the client was given an event id (it can resume the stream), and whether a response went out.
  let resumable = false
  let answered = false
  /**
   * The upstream stream is over. Unanswered, with nothing to resume from, the request's error ends it: the
   * client would otherwise wait for an answer that cannot come.
   */
  const over = (how: string) => {
    if (!answered && !resumable)
      cut(`The MCP server's stream ${how} before it answered, with no event id to resume from; the gateway ended it.`)
    else if (!out.destroyed && !out.writableEnded) out.end()
    finish()
  }

  const relayEvent = async (upstreamEvent: string) => {
    const lines = upstreamEvent
      .split("\n")
      .map((line) => (line.startsWith("id:") ? `id: ${eventId(line.slice(3).replace(/^ /, ""))}` : line))
    const raw = lines.join("\n")
    const data = lines.filter((line) => line.startsWith("data:")).map((line) => line.slice(5).replace(/^ /, ""))
    const parsed = data.length === 0 ? undefined : parseJson(data.join("\n"))
    // Comments, retry hints and data that is not JSON (no MCP client would act on it) go on as sent.
    const value = parsed?.value
    if (typeof value === "object" && value !== null && !isScreenableObject(value)) {
      // A batch, or a message nested past what is screened: not passed unseen; the request ends with an error.
      cut(
        `The MCP server sent a message that is not one JSON-RPC message nested at most ${Limits.body.depth} levels, which the gateway cannot screen; it ended the stream.`
      )
      return false
    }
    const verdict = parsed === undefined ? "keep" : await screen(parsed.value)
    if (verdict === "drop") return true
    if (isResponse(verdict === "keep" ? value : verdict.replace)) answered = true
    if (lines.some((line) => line.startsWith("id:"))) resumable = true
    if (verdict === "keep") return writeDrained(out, `${raw}\n\n`)
    return writeDrained(
      out,
      encodeEvent(
        lines.filter((line) => line !== "" && !line.startsWith("data:")),
        verdict.replace
      )
    )
  }

  const run = async () => {
    const splitter = new SseEventSplitter(limits.maxEventBytes)
    for await (const chunk of body) {
      if (finished) return
      const read = splitter.push(chunk as Buffer)
      if (read._tag === "too_long") {
        cut(
          `The MCP server sent an event longer than ${limits.maxEventBytes} bytes (GATEWAY_SSE_MAX_LINE_BYTES); the gateway ended the stream.`
        )
        return
      }
      for (const event of read.events) if (!(await relayEvent(event)) || finished) return
    }
    const rest = splitter.end()
    if (rest !== undefined && !finished) await relayEvent(rest)
    over("ended")
  }
  run().catch(() => {
    // The upstream body broke off (idle timeout, reset): end what the client has.
    over("broke off")
  })
  return out
}
