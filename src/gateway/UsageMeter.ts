/**
 * Reads token usage out of a provider response as it passes through, without
 * holding the body: SSE streams are scanned line by line; a JSON body is kept
 * (up to a bound) only to read its `usage` when it ends.
 *
 * - chat style: `usage.prompt_tokens` / `usage.completion_tokens` (streams
 *   report them in the last chunk because the gateway asks for
 *   `stream_options.include_usage`);
 * - messages style: `message_start.message.usage` then `message_delta.usage`,
 *   whose counts are cumulative, so the latest value wins (never summed).
 *   Cache writes and reads count as prompt tokens.
 * A stream cut short keeps what it saw; without a usage report, completion
 * tokens are the content deltas seen (about one token each) and chat prompt
 * tokens are estimated from the request size (4 bytes a token), flagged
 * `estimated`. A whole JSON answer without one is estimated likewise (its
 * JSON, 4 characters a token).
 *
 * Each chunk is scanned once, for its own line ends (LF, CR or CRLF): the unfinished line is
 * kept only up to `maxLineBytes`. A longer line is dropped and `lineTooLong`
 * set; the proxy then ends the stream (Calls.ts), so a provider that never
 * sends a newline costs neither memory nor CPU beyond that bound.
 */
export type Dialect = "chat" | "messages"

export interface MeteredUsage {
  readonly promptTokens: number
  readonly completionTokens: number
  /** True when the provider's final usage report was read. */
  readonly complete: boolean
  /** True when some count is an estimate (stream cut before its usage report). */
  readonly estimated: boolean
}

/** The most of a JSON answer read whole (here for its usage; the MCP gateway for its results). */
export const MAX_JSON_BYTES = 16 * 1024 * 1024

/**
 * The most tokens one call is counted for, each way: far beyond any model's context, and small enough that
 * costs and window sums stay exact integers. A provider's larger report is counted as this (docs/gateway.md).
 */
export const MAX_COUNTED_TOKENS = 100_000_000

/** A token count as reported: a number, or (some compatible servers) a string of digits; anything else is 0. */
const count = (value: unknown) => {
  const reported = typeof value === "string" && /^\d{1,20}$/.test(value) ? Number(value) : value
  return typeof reported === "number" && Number.isFinite(reported) && reported > 0
    ? Math.min(Math.trunc(reported), MAX_COUNTED_TOKENS)
    : 0
}

/** An SSE line end: LF, CR, or (as a CR then an empty line, which no rule reads) CRLF. */
const LINE_END = /[\r\n]/g

const asRecord = (value: unknown): Record<string, unknown> | undefined =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined

const parse = (text: string): Record<string, unknown> | undefined => {
  try {
    return asRecord(JSON.parse(text))
  } catch {
    return undefined
  }
}

const anthropicPrompt = (usage: Record<string, unknown>) =>
  Math.min(
    count(usage["input_tokens"]) +
      count(usage["cache_creation_input_tokens"]) +
      count(usage["cache_read_input_tokens"]),
    MAX_COUNTED_TOKENS
  )

export class UsageMeter {
  private prompt = 0
  private completion = 0
  private promptSeen = false
  private complete = false
  private deltas = 0
  private sse = false
  /** The current line's text before this chunk (its bytes in `pendingBytes`). */
  private pending = ""
  private pendingBytes = 0
  /** The current line outgrew the bound: dropped up to its newline. */
  private skipping = false
  private overflowed = false
  private readonly decoder = new TextDecoder()
  private readonly jsonChunks: Array<Uint8Array> = []
  private jsonBytes = 0

  constructor(
    readonly dialect: Dialect,
    /** Request body size, for the prompt estimate of a chat stream cut short. */
    private readonly requestBytes: number,
    /** Longest SSE line held while waiting for its newline. */
    private readonly maxLineBytes: number
  ) {}

  /** Call once with the response's Content-Type before the first chunk. */
  contentType(type: string | undefined) {
    this.sse = (type ?? "").toLowerCase().includes("text/event-stream")
  }

  get isSse() {
    return this.sse
  }

  /** True once an SSE line outgrew `maxLineBytes` (that line was not metered). */
  get lineTooLong() {
    return this.overflowed
  }

  onChunk(chunk: Uint8Array) {
    if (!this.sse) {
      if (this.jsonBytes + chunk.length <= MAX_JSON_BYTES) this.jsonChunks.push(chunk)
      this.jsonBytes += chunk.length
      return
    }
    const text = this.decoder.decode(chunk, { stream: true })
    let start = 0
    LINE_END.lastIndex = 0
    for (let end = LINE_END.exec(text); end !== null; end = LINE_END.exec(text)) {
      if (!this.skipping) this.onLine(this.pending + text.slice(start, end.index))
      this.skipping = false
      this.pending = ""
      this.pendingBytes = 0
      start = end.index + 1
    }
    if (this.skipping || start === text.length) return
    const rest = start === 0 ? text : text.slice(start)
    this.pendingBytes += start === 0 ? chunk.length : Buffer.byteLength(rest)
    if (this.pendingBytes > this.maxLineBytes) {
      // Not metered: the line is dropped up to its newline, and the proxy ends the stream.
      this.skipping = true
      this.overflowed = true
      this.pending = ""
      this.pendingBytes = 0
    } else {
      this.pending += rest
    }
  }

  private onLine(line: string) {
    if (!line.startsWith("data:")) return
    const data = line.slice(5).trimStart()
    if (this.dialect === "chat") this.onChatData(data)
    else this.onMessagesData(data)
  }

  private onChatData(data: string) {
    if (data === "[DONE]") return
    if (data.includes('"usage"')) {
      const usage = asRecord(parse(data)?.["usage"])
      if (usage !== undefined) {
        this.prompt = count(usage["prompt_tokens"])
        this.completion = count(usage["completion_tokens"])
        this.promptSeen = true
        this.complete = true
        return
      }
    }
    if (data.includes('"delta"')) this.deltas += 1
  }

  private onMessagesData(data: string) {
    if (data.includes('"content_block_delta"')) {
      this.deltas += 1
      return
    }
    if (!data.includes('"usage"')) return
    const event = parse(data)
    if (event === undefined) return
    const usage = asRecord(event["type"] === "message_start" ? asRecord(event["message"])?.["usage"] : event["usage"])
    if (usage === undefined) return
    if ("input_tokens" in usage && usage["input_tokens"] !== null) {
      this.prompt = anthropicPrompt(usage)
      this.promptSeen = true
    }
    if ("output_tokens" in usage) this.completion = count(usage["output_tokens"])
    if (event["type"] === "message_delta") this.complete = true
  }

  /** The usage seen so far; call when the body ended or was cut. */
  finish(): MeteredUsage {
    if (!this.sse) return this.finishJson()
    if (this.complete) {
      return { promptTokens: this.prompt, completionTokens: this.completion, complete: true, estimated: false }
    }
    const promptEstimated = !this.promptSeen && this.dialect === "chat"
    return {
      promptTokens: this.promptSeen ? this.prompt : promptEstimated ? Math.ceil(this.requestBytes / 4) : 0,
      completionTokens: Math.max(this.completion, this.deltas),
      complete: false,
      estimated: promptEstimated || this.deltas > this.completion
    }
  }

  /**
   * An answer (chat: `choices`; messages: `content`) without a usage report, as some compatible servers send:
   * estimated like a stream cut short (prompt: request bytes / 4; completion: the answer's JSON / 4), so its
   * calls are not recorded as free. Anything else (an error body) used no tokens.
   */
  private estimateJson(body: Record<string, unknown> | undefined): MeteredUsage {
    const answer = body?.[this.dialect === "chat" ? "choices" : "content"]
    if (!Array.isArray(answer)) return { promptTokens: 0, completionTokens: 0, complete: false, estimated: false }
    return {
      promptTokens: Math.min(Math.ceil(this.requestBytes / 4), MAX_COUNTED_TOKENS),
      completionTokens: Math.min(Math.ceil(JSON.stringify(answer).length / 4), MAX_COUNTED_TOKENS),
      complete: false,
      estimated: true
    }
  }

  private finishJson(): MeteredUsage {
    const body =
      this.jsonBytes <= MAX_JSON_BYTES ? parse(new TextDecoder().decode(Buffer.concat(this.jsonChunks))) : undefined
    const usage = asRecord(body?.["usage"])
    if (usage === undefined) return this.estimateJson(body)
    return this.dialect === "chat"
      ? {
          promptTokens: count(usage["prompt_tokens"]),
          completionTokens: count(usage["completion_tokens"]),
          complete: true,
          estimated: false
        }
      : {
          promptTokens: anthropicPrompt(usage),
          completionTokens: count(usage["output_tokens"]),
          complete: true,
          estimated: false
        }
  }
}
