/**
 * A stub LLM provider on loopback (the outside boundary of the gateway),
 * speaking both dialects: `POST /chat/completions` (OpenAI style) and
 * `POST /v1/messages` (Anthropic style). What it answers depends on the
 * request's `model`:
 * - `fail-500`: 500 with a JSON body; `fail-500-empty`: 500 without a body;
 *   `fail-401`: 401 (the provider refuses the key);
 * - `slow`: holds its answer until `release()` (a connection closed before
 *   that is recorded in `aborted`), so a timeout fires whatever the speed of
 *   the machine;
 * - `hang`: a stream that sends its start and a few deltas, then never ends
 *   (until the gateway aborts it: recorded in `aborted`);
 * - `held-stream`: like `hang`, but the rest of the stream (usage, end)
 *   follows on `release()`;
 * - `no-newline`: an SSE stream of `NO_NEWLINE_BYTES` without a newline,
 *   then nothing (until the gateway aborts it: recorded in `aborted`);
 * - `budget`: the usage equals `max_tokens` (times `n`: the worst case), after 30 ms;
 * - `say:<text>`: a short answer with `<text>` as its reply (streamed: in pieces of 3 characters);
 * - `tool-call`: a short answer proposing the tool call TOOL_CALL (streamed: its arguments in pieces);
 * - `odd:<kind>:<text>`: a hostile or careless provider's answer (stub-odd-answers.ts; a closed
 *   `odd:say-hold:` stream is recorded in `aborted`);
 * - anything else: a short answer with fixed usage (see USAGE).
 * Every request is recorded (path, headers, parsed body).
 */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { answerOdd } from "./stub-odd-answers.js"

export const USAGE = {
  chat: { prompt_tokens: 12, completion_tokens: 3 },
  messages: { input_tokens: 15, output_tokens: 7 }
} as const

/** Anthropic usage of a `hang` stream's message_start. */
export const HANG_INPUT_TOKENS = 40

/** What a `no-newline` stream sends: 16 MiB in one line. */
export const NO_NEWLINE_BYTES = 16 * 1024 * 1024

/** The tool call a `tool-call` answer proposes. */
export const TOOL_CALL = { name: "send_money", input: { to: "attacker-account", amount: 500 } } as const

/**
 * The reply text of a non-streamed answer: `say:<text>`; `say-json:<JSON string>` for text a request may not
 * carry (a NUL, a lone surrogate), which a provider may still answer; else "Hello!".
 */
const replyText = (model: string) =>
  model.startsWith("say:")
    ? model.slice(4)
    : model.startsWith("say-json:")
      ? String(JSON.parse(model.slice(9)))
      : "Hello!"

/** The pieces a streamed answer sends: `say:<text>` in pieces of 3 characters, so a pattern spans chunks. */
const replyPieces = (model: string) =>
  model.startsWith("say:") ? (model.slice(4).match(/[\s\S]{1,3}/g) ?? []) : ["Hel", "lo", "!"]

/** TOOL_CALL's arguments as a stream sends them: in pieces of 5 characters. */
const argumentPieces = () => JSON.stringify(TOOL_CALL.input).match(/[\s\S]{1,5}/g) ?? []

export interface SeenRequest {
  readonly path: string
  readonly headers: IncomingHttpHeaders
  readonly text: string
  readonly body: Record<string, unknown>
}

export interface StubUpstream {
  readonly url: string
  readonly requests: Array<SeenRequest>
  /** Models of `hang`, `held-stream`, `no-newline`, `slow` and `odd:say-hold:` requests whose connection the gateway closed before the answer ended. */
  readonly aborted: Array<string>
  /** Answers (or the rest of) every `slow` and `held-stream` request held so far. */
  readonly release: () => void
  readonly close: () => Promise<void>
}

const sse = (response: ServerResponse, data: unknown, event?: string) =>
  response.write(
    `${event === undefined ? "" : `event: ${event}\n`}data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`
  )

const chatChunk = (model: string, delta: Record<string, unknown>) => ({
  id: "chatcmpl-stub",
  object: "chat.completion.chunk",
  created: 1_700_000_000,
  model,
  choices: [{ index: 0, delta, finish_reason: null }]
})

/** `hold` receives the rest of a stream, to send later (`held-stream`), or nothing to send it never (`hang`). */
type Hold = ((rest: () => void) => void) | undefined

const chat = (body: Record<string, unknown>, response: ServerResponse, hold: Hold) => {
  const model = String(body["model"])
  const maxTokens = Number(body["max_tokens"] ?? body["max_completion_tokens"] ?? 0)
  // Every one of `n` choices may use max_tokens: a `budget` answer uses them all.
  const choices = typeof body["n"] === "number" ? body["n"] : 1
  const usage = model === "budget" ? { prompt_tokens: 5, completion_tokens: maxTokens * choices } : USAGE.chat
  if (body["stream"] !== true) {
    response.writeHead(200, { "content-type": "application/json", "x-request-id": "upstream-req-1" })
    response.end(
      JSON.stringify({
        id: "chatcmpl-stub",
        object: "chat.completion",
        created: 1_700_000_000,
        model,
        choices: [
          {
            index: 0,
            message:
              model === "tool-call"
                ? {
                    role: "assistant",
                    content: null,
                    tool_calls: [
                      {
                        id: "call_1",
                        type: "function",
                        function: { name: TOOL_CALL.name, arguments: JSON.stringify(TOOL_CALL.input) }
                      }
                    ]
                  }
                : { role: "assistant", content: replyText(model) },
            finish_reason: model === "tool-call" ? "tool_calls" : "stop",
            logprobs: null
          }
        ],
        usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens }
      })
    )
    return
  }
  response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
  if (model === "tool-call") {
    sse(
      response,
      chatChunk(model, {
        role: "assistant",
        content: null,
        tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: TOOL_CALL.name, arguments: "" } }]
      })
    )
    for (const piece of argumentPieces()) {
      sse(response, chatChunk(model, { tool_calls: [{ index: 0, function: { arguments: piece } }] }))
    }
  } else {
    sse(response, chatChunk(model, { role: "assistant", content: "" }))
    for (const piece of replyPieces(model)) sse(response, chatChunk(model, { content: piece }))
  }
  const rest = () => {
    const options = body["stream_options"] as { include_usage?: boolean } | undefined
    if (options?.include_usage === true) {
      sse(response, {
        id: "chatcmpl-stub",
        object: "chat.completion.chunk",
        created: 1_700_000_000,
        model,
        choices: [],
        usage
      })
    }
    sse(response, "[DONE]")
    response.end()
  }
  if (hold === undefined) rest()
  else hold(rest)
}

const messages = (body: Record<string, unknown>, response: ServerResponse, hold: Hold) => {
  const model = String(body["model"])
  const usage = model === "budget" ? { input_tokens: 5, output_tokens: Number(body["max_tokens"]) } : USAGE.messages
  const message = {
    id: "msg_stub",
    type: "message",
    role: "assistant",
    model,
    stop_sequence: null
  }
  if (body["stream"] !== true) {
    response.writeHead(200, { "content-type": "application/json", "request-id": "upstream-req-2" })
    response.end(
      JSON.stringify({
        ...message,
        content:
          model === "tool-call"
            ? [
                { type: "text", text: "Sending it." },
                { type: "tool_use", id: "toolu_1", name: TOOL_CALL.name, input: TOOL_CALL.input }
              ]
            : [{ type: "text", text: replyText(model) }],
        stop_reason: model === "tool-call" ? "tool_use" : "end_turn",
        usage
      })
    )
    return
  }
  response.writeHead(200, { "content-type": "text/event-stream" })
  const input = model === "hang" ? HANG_INPUT_TOKENS : usage.input_tokens
  sse(
    response,
    {
      type: "message_start",
      message: { ...message, content: [], stop_reason: null, usage: { input_tokens: input, output_tokens: 1 } }
    },
    "message_start"
  )
  if (model === "tool-call") {
    sse(
      response,
      {
        type: "content_block_start",
        index: 0,
        content_block: { type: "tool_use", id: "toolu_1", name: TOOL_CALL.name, input: {} }
      },
      "content_block_start"
    )
    for (const piece of argumentPieces()) {
      sse(
        response,
        { type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: piece } },
        "content_block_delta"
      )
    }
  } else {
    sse(
      response,
      { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
      "content_block_start"
    )
    for (const piece of replyPieces(model)) {
      sse(
        response,
        { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: piece } },
        "content_block_delta"
      )
    }
  }
  const rest = () => {
    sse(response, { type: "content_block_stop", index: 0 }, "content_block_stop")
    // Cumulative: output_tokens is the total so far, not an increment over message_start's 1.
    sse(
      response,
      {
        type: "message_delta",
        delta: { stop_reason: "end_turn", stop_sequence: null },
        usage: { output_tokens: usage.output_tokens }
      },
      "message_delta"
    )
    sse(response, { type: "message_stop" }, "message_stop")
    response.end()
  }
  if (hold === undefined) rest()
  else hold(rest)
}

/** `no-newline`: 16 MiB of one SSE line, written with backpressure, then the stream stays open. */
const noNewline = (response: ServerResponse) => {
  response.writeHead(200, { "content-type": "text/event-stream" })
  const piece = Buffer.alloc(64 * 1024, "x")
  let sent = 0
  const more = () => {
    while (sent < NO_NEWLINE_BYTES && !response.destroyed) {
      sent += piece.length
      if (!response.write(piece)) return void response.once("drain", more)
    }
  }
  response.write("data: ")
  more()
}

export const startStubUpstream = () =>
  new Promise<StubUpstream>((resolve) => {
    const requests: Array<SeenRequest> = []
    const aborted: Array<string> = []
    const held: Array<() => void> = []
    const release = () => {
      for (const answer of held.splice(0)) answer()
    }
    const server = createServer((request, response) => {
      const chunks: Array<Buffer> = []
      request.on("data", (chunk: Buffer) => chunks.push(chunk))
      request.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8")
        const body = JSON.parse(text) as Record<string, unknown>
        const path = request.url ?? ""
        requests.push({ path, headers: request.headers, text, body })
        const model = String(body["model"])
        const answer = () => {
          if (model === "fail-500") {
            response.writeHead(500, { "content-type": "application/json" })
            response.end(JSON.stringify({ error: { message: "stub upstream exploded", type: "server_error" } }))
          } else if (model === "fail-500-empty") {
            response.writeHead(500, { "content-length": "0" })
            response.end()
          } else if (model === "fail-401") {
            response.writeHead(401, { "content-type": "application/json" })
            response.end(JSON.stringify({ error: { message: "bad key" } }))
          } else if (model === "no-newline") {
            noNewline(response)
          } else if (model.startsWith("odd:")) {
            answerOdd(model, response)
          } else if (path === "/chat/completions") {
            chat(body, response, hold)
          } else if (path === "/v1/messages") {
            messages(body, response, hold)
          } else {
            response.writeHead(404)
            response.end()
          }
        }
        // Held until `release()`, unless the gateway has gone by then.
        const later = (then: () => void) => void held.push(() => (response.destroyed ? undefined : then()))
        const hold: Hold = model === "hang" ? () => {} : model === "held-stream" ? later : undefined
        if (["hang", "held-stream", "no-newline", "slow"].includes(model) || model.startsWith("odd:say-hold:")) {
          response.on("close", () => {
            if (!response.writableEnded) aborted.push(model)
          })
        }
        if (model === "slow") later(answer)
        else if (model === "budget") setTimeout(answer, 30)
        else answer()
      })
    })
    server.keepAliveTimeout = 60_000
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo
      resolve({
        url: `http://127.0.0.1:${port}`,
        requests,
        aborted,
        release,
        close: () =>
          new Promise<void>((done) => {
            server.closeAllConnections()
            server.close(() => done())
          })
      })
    })
  })
