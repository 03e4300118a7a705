/**
 * Answers of a hostile or careless provider, for the stub (stub-upstream.ts) under model `odd:<kind>:<text>`:
 * - `upper-json`: a chat completion saying `<text>`, labelled `Application/Json`;
 * - `plain`: `<text>` as `text/plain`;
 * - `cr-sse`: a chat stream saying `<text>` whose lines end in a lone CR;
 * - `split-crlf-sse`: a chat stream with CRLF line ends, each CR and its LF in separate writes;
 * - `deep`: a JSON object nested 100,000 levels;
 * - `broken-length`: `Content-Length: 1000`, then 10 bytes, then the connection is dropped.
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

const chunkOf = (delta: Record<string, unknown>) =>
  JSON.stringify({ id: "chatcmpl-odd", object: "chat.completion.chunk", model: "odd", choices: [{ index: 0, delta }] })

const streamLines = (text: string) => [
  `data: ${chunkOf({ role: "assistant", content: "" })}`,
  "",
  ...(text.match(/[\s\S]{1,3}/g) ?? []).flatMap((piece) => [`data: ${chunkOf({ content: piece })}`, ""]),
  "data: [DONE]",
  ""
]

/** Writes `parts` one per event-loop turn, so each leaves as its own chunk. */
const writeApart = (response: ServerResponse, parts: ReadonlyArray<string>) => {
  const [first, ...rest] = parts
  if (first === undefined) return void response.end()
  response.write(first)
  setImmediate(() => writeApart(response, rest))
}

export const answerOdd = (model: string, response: ServerResponse) => {
  const [, kind = "", ...words] = model.split(":")
  const text = words.join(":")
  switch (kind) {
    case "upper-json":
      response.writeHead(200, { "content-type": "Application/Json" })
      return void response.end(completion(text))
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
    default:
      response.writeHead(400)
      return void response.end()
  }
}
