/**
 * Answers of a hostile or careless provider, for the stub (stub-upstream.ts) under model `odd:<kind>:<text>`:
 * - `upper-json`: a chat completion saying `<text>`, labelled `Application/Json`;
 * - `plain`: `<text>` as `text/plain`;
 * - `cr-sse`: a chat stream saying `<text>` whose lines end in a lone CR;
 * - `split-crlf-sse`: a chat stream with CRLF line ends, each CR and its LF in separate writes;
 * - `deep`: a JSON object nested 100,000 levels;
 * - `broken-length`: `Content-Length: 1000`, then 10 bytes, then the connection is dropped;
 * - `endless-event`: a stream of short `data:` lines with no blank line between them (4 MiB, or until cut);
 * - `many-tools`: a chat completion proposing MANY_TOOL_CALLS tool calls;
 * - `many-tools-sse`: a chat stream proposing MANY_TOOL_CALLS tool calls, each whole in one event;
 * - `big-event`: a chat stream of one chunk saying `<text>` then 1 MiB of `x`, in one write, then `[DONE]`;
 * - `garbled-sse`: a chat stream whose one event's data is `<text>` itself, not JSON, then `[DONE]`;
 * - `no-usage`: a chat completion saying `<text>` without a `usage` report (some compatible servers);
 * - `say-hold`: a chat stream saying `<text>` (3 characters a chunk) that then stays open, never ending;
 * - `legacy-function`: a chat completion whose message proposes the legacy `function_call` with `{"text": <text>}`;
 * - `status-<code>`: a chat completion saying `<text>` with HTTP status `<code>` (e.g. 201, 203);
 * - `status-<code>-sse`: a chat stream saying `<text>` with HTTP status `<code>`;
 * - `shape-<shape>`: a stream saying `<text>` (3 characters a chunk) in chunk shapes real providers send
 *   (CHUNK_SHAPES: role on every chunk, usage on every chunk, two choices a chunk, the last text with the
 *   finish reason, a tool call with text and its finish reason in one chunk, a legacy `function_call` in
 *   pieces, content as a list of parts; messages style: a block start
 *   carrying the text, a tool_use start carrying its input `{"text": <text>}`).
 */
import type { ServerResponse } from "node:http"

const completion = (text: string) =>
  JSON.stringify({
    id: "chatcmpl-odd",
    object: "chat.completion",
    created: 1_700_000_000,
    model: "odd",
    choices: [{ index: 0, message: { role: "assistant", content: text }, finish_reason: "stop" }],
    usage: { prompt_tokens: 3, completion_tokens: 2 }
  })

/** An answer (no usage report) of one choice whose assistant message carries `fields` instead of text. */
const answerWith = (fields: Record<string, unknown>, finishReason: string) =>
  JSON.stringify({
    id: "chatcmpl-odd",
    object: "chat.completion",
    model: "odd",
    choices: [{ index: 0, message: { role: "assistant", content: null, ...fields }, finish_reason: finishReason }]
  })

/** More tool calls in one answer than the gateway decides (MAX_SCREENED_ITEMS). */
export const MANY_TOOL_CALLS = 200

const toolCall = (index: number) => ({
  index,
  id: `call_${index}`,
  type: "function",
  function: { name: "lookup", arguments: JSON.stringify({ n: index }) }
})

const chunkOf = (delta: Record<string, unknown>) =>
  JSON.stringify({ id: "chatcmpl-odd", object: "chat.completion.chunk", model: "odd", choices: [{ index: 0, delta }] })

const streamLines = (text: string) => [
  `data: ${chunkOf({ role: "assistant", content: "" })}`,
  "",
  ...(text.match(/[\s\S]{1,3}/g) ?? []).flatMap((piece) => [`data: ${chunkOf({ content: piece })}`, ""]),
  "data: [DONE]",
  ""
]

/** Writes `parts` one per event-loop turn, so each leaves as its own chunk; then ends the answer, unless not to `end`. */
const writeApart = (response: ServerResponse, parts: ReadonlyArray<string>, end = true) => {
  const [first, ...rest] = parts
  if (first === undefined) return end ? void response.end() : undefined
  if (response.destroyed) return
  response.write(first)
  setImmediate(() => writeApart(response, rest, end))
}

/** Writes `piece` again and again (waiting for drain) until `total` bytes went out or the reader left. */
const writeUntil = (response: ServerResponse, piece: string, total: number) => {
  let sent = 0
  const more = () => {
    while (sent < total && !response.destroyed) {
      sent += piece.length
      if (!response.write(piece)) return void response.once("drain", more)
    }
    if (!response.destroyed) response.end("\n")
  }
  more()
}

/** Chunk shapes of `shape-<shape>` streams (chat style, but for the `messages-` ones). */
export const CHUNK_SHAPES = [
  "role-each",
  "usage-each",
  "two-choices",
  "finish-with-text",
  "tool-with-text",
  "legacy-function",
  "content-parts",
  "messages-start-text",
  "messages-start-input"
] as const

const shapedChunk = (choices: Array<Record<string, unknown>>, extra: Record<string, unknown> = {}) =>
  `data: ${JSON.stringify({ id: "chatcmpl-odd", object: "chat.completion.chunk", model: "odd", choices, ...extra })}\n\n`

const messagesEvent = (data: Record<string, unknown>) =>
  `event: ${String(data["type"])}\ndata: ${JSON.stringify(data)}\n\n`

/** The events of a `shape-<shape>` stream saying `text`. */
const shapedStream = (shape: string, text: string): Array<string> => {
  const pieces = text.match(/[\s\S]{1,3}/g) ?? []
  const choice = (delta: Record<string, unknown>, index = 0, finish: string | null = null) => ({
    index,
    delta,
    logprobs: null,
    finish_reason: finish
  })
  const usage = (n: number) => ({ usage: { prompt_tokens: 3, completion_tokens: n, total_tokens: 3 + n } })
  switch (shape) {
    case "role-each":
      return [
        ...pieces.map((piece) => shapedChunk([choice({ role: "assistant", content: piece })])),
        shapedChunk([choice({ role: "assistant", content: "" }, 0, "stop")]),
        "data: [DONE]\n\n"
      ]
    case "usage-each":
      return [
        ...pieces.map((piece, i) => shapedChunk([choice({ content: piece })], usage(i + 1))),
        shapedChunk([choice({}, 0, "stop")], usage(pieces.length)),
        "data: [DONE]\n\n"
      ]
    case "two-choices":
      return [
        ...pieces.map((piece) => shapedChunk([choice({ content: piece }), choice({ content: piece }, 1)])),
        shapedChunk([choice({}, 0, "stop"), choice({}, 1, "stop")]),
        "data: [DONE]\n\n"
      ]
    case "finish-with-text":
      return [
        ...pieces.slice(0, -1).map((piece) => shapedChunk([choice({ content: piece })])),
        shapedChunk([choice({ content: pieces.at(-1) ?? "" }, 0, "stop")]),
        "data: [DONE]\n\n"
      ]
    case "tool-with-text": {
      const call = {
        index: 0,
        id: "call_1",
        type: "function",
        function: { name: "lookup", arguments: JSON.stringify({ text }) }
      }
      return [
        shapedChunk([choice({ role: "assistant", content: "On it.", tool_calls: [call] }, 0, "tool_calls")]),
        "data: [DONE]\n\n"
      ]
    }
    case "content-parts":
      // Content as a list of parts (Mistral's reasoning models): a thinking part first, then text parts.
      return [
        shapedChunk([
          choice({ role: "assistant", content: [{ type: "thinking", thinking: [{ type: "text", text: "Hmm." }] }] })
        ]),
        ...pieces.map((piece) => shapedChunk([choice({ content: [{ type: "text", text: piece }] })])),
        shapedChunk([choice({}, 0, "stop")]),
        "data: [DONE]\n\n"
      ]
    case "legacy-function": {
      // The deprecated `functions` API: the call as `delta.function_call`, its arguments in pieces.
      const args = (JSON.stringify({ text }).match(/[\s\S]{1,5}/g) ?? []).map((piece) =>
        shapedChunk([choice({ function_call: { arguments: piece } })])
      )
      return [
        shapedChunk([choice({ role: "assistant", content: null, function_call: { name: "lookup", arguments: "" } })]),
        ...args,
        shapedChunk([choice({}, 0, "function_call")]),
        "data: [DONE]\n\n"
      ]
    }
    case "messages-start-text":
    case "messages-start-input": {
      const block =
        shape === "messages-start-text"
          ? { type: "text", text }
          : { type: "tool_use", id: "toolu_1", name: "lookup", input: { text } }
      return [
        messagesEvent({
          type: "message_start",
          message: {
            id: "msg_odd",
            type: "message",
            role: "assistant",
            model: "odd",
            content: [],
            usage: { input_tokens: 3, output_tokens: 1 }
          }
        }),
        messagesEvent({ type: "content_block_start", index: 0, content_block: block }),
        messagesEvent({ type: "content_block_stop", index: 0 }),
        messagesEvent({
          type: "message_delta",
          delta: { stop_reason: "end_turn", stop_sequence: null },
          usage: { output_tokens: 5 }
        }),
        messagesEvent({ type: "message_stop" })
      ]
    }
    default:
      return []
  }
}

export const answerOdd = (model: string, response: ServerResponse) => {
  const [, kind = "", ...words] = model.split(":")
  const text = words.join(":")
  if (kind.startsWith("shape-")) {
    response.writeHead(200, { "content-type": "text/event-stream" })
    return writeApart(response, shapedStream(kind.slice(6), text))
  }
  const status = /^status-(\d{3})(-sse)?$/.exec(kind)
  if (status !== null) {
    const stream = status[2] !== undefined
    response.writeHead(Number(status[1]), { "content-type": stream ? "text/event-stream" : "application/json" })
    return void response.end(stream ? streamLines(text).join("\n") : completion(text))
  }
  switch (kind) {
    case "upper-json":
      response.writeHead(200, { "content-type": "Application/Json" })
      return void response.end(completion(text))
    case "legacy-function":
      response.writeHead(200, { "content-type": "application/json" })
      return void response.end(
        answerWith({ function_call: { name: "lookup", arguments: JSON.stringify({ text }) } }, "function_call")
      )
    case "big-event":
      response.writeHead(200, { "content-type": "text/event-stream" })
      return void response.end(
        `data: ${chunkOf({ content: `${text} ${"x".repeat(1024 * 1024)}` })}\n\ndata: [DONE]\n\n`
      )
    case "garbled-sse":
      response.writeHead(200, { "content-type": "text/event-stream" })
      return void response.end(`data: ${text}\n\ndata: [DONE]\n\n`)
    case "no-usage": {
      const { usage: _usage, ...answer } = JSON.parse(completion(text)) as Record<string, unknown>
      response.writeHead(200, { "content-type": "application/json" })
      return void response.end(JSON.stringify(answer))
    }
    case "say-hold":
      response.writeHead(200, { "content-type": "text/event-stream" })
      return writeApart(
        response,
        streamLines(text)
          .slice(0, -2)
          .map((line) => `${line}\n`),
        false
      )
    case "plain":
      response.writeHead(200, { "content-type": "text/plain" })
      return void response.end(text)
    case "cr-sse":
      response.writeHead(200, { "content-type": "text/event-stream" })
      return void response.end(streamLines(text).join("\r") + "\r")
    case "split-crlf-sse":
      response.writeHead(200, { "content-type": "text/event-stream" })
      return writeApart(
        response,
        streamLines(text).flatMap((line) => [`${line}\r`, "\n"])
      )
    case "deep":
      response.writeHead(200, { "content-type": "application/json" })
      return void response.end(`${'{"a":'.repeat(100_000)}1${"}".repeat(100_000)}`)
    case "broken-length":
      response.writeHead(200, { "content-type": "application/json", "content-length": "1000" })
      response.write('{"id":"x",')
      return void setImmediate(() => response.socket?.destroy())
    case "endless-event":
      response.writeHead(200, { "content-type": "text/event-stream" })
      return writeUntil(response, `data: ${chunkOf({ content: "x" })}\n`.repeat(100), 4 * 1024 * 1024)
    case "many-tools":
      response.writeHead(200, { "content-type": "application/json" })
      return void response.end(
        answerWith({ tool_calls: [...Array(MANY_TOOL_CALLS).keys()].map(toolCall) }, "tool_calls")
      )
    case "many-tools-sse":
      response.writeHead(200, { "content-type": "text/event-stream" })
      return writeApart(response, [
        ...[...Array(MANY_TOOL_CALLS).keys()].map((index) => `data: ${chunkOf({ tool_calls: [toolCall(index)] })}\n\n`),
        "data: [DONE]\n\n"
      ])
    default:
      response.writeHead(400)
      return void response.end()
  }
}
