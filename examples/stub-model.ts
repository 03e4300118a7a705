/**
 * A stub chat model on loopback speaking OpenAI's `POST /v1/chat/completions`
 * (plain and streamed), so the examples and the adapter tests run an agent
 * without a real provider. What it answers follows the conversation:
 * - after a tool result (a `tool` message last): `Tool said: <its content>`;
 * - a user message `call <tool> <json arguments>`: a call of that tool;
 * - any other user message: `You said: <the message>`.
 * Every request body is recorded. Run alone: `node --import tsx examples/stub-model.ts [port]`.
 */
import { createServer, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"

interface ChatMessage {
  readonly role: string
  readonly content?: unknown
}

type Answer =
  | { readonly kind: "text"; readonly text: string }
  | { readonly kind: "tool"; readonly name: string; readonly args: string }

const textOf = (content: unknown): string =>
  typeof content === "string"
    ? content
    : Array.isArray(content)
      ? content.map((part: { text?: unknown }) => (typeof part.text === "string" ? part.text : "")).join("")
      : ""

/** What the stub answers to a conversation. */
export const answerTo = (messages: ReadonlyArray<ChatMessage>): Answer => {
  const last = messages.at(-1)
  if (last?.role === "tool") return { kind: "text", text: `Tool said: ${textOf(last.content)}` }
  const said = textOf(last?.content)
  const call = /^call (\w+) (\{.*\})$/s.exec(said.trim())
  return call === null ? { kind: "text", text: `You said: ${said}` } : { kind: "tool", name: call[1]!, args: call[2]! }
}

const USAGE = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 }
const base = (model: string) => ({ id: "chatcmpl-stub", created: 1_700_000_000, model })

const completion = (model: string, answer: Answer) => ({
  ...base(model),
  object: "chat.completion",
  choices: [
    {
      index: 0,
      finish_reason: answer.kind === "tool" ? "tool_calls" : "stop",
      message:
        answer.kind === "tool"
          ? {
              role: "assistant",
              content: null,
              tool_calls: [{ id: "call_1", type: "function", function: { name: answer.name, arguments: answer.args } }]
            }
          : { role: "assistant", content: answer.text }
    }
  ],
  usage: USAGE
})

/** The answer as SSE chunks: a text in pieces of 4 characters, a tool call's arguments in 2 pieces. */
const stream = (response: ServerResponse, model: string, answer: Answer) => {
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
    response.write(
      `data: ${JSON.stringify({ ...base(model), object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`
    )
  response.writeHead(200, { "content-type": "text/event-stream" })
  chunk({ role: "assistant", content: "" })
  if (answer.kind === "text") {
    for (const piece of answer.text.match(/[\s\S]{1,4}/g) ?? []) chunk({ content: piece })
    chunk({}, "stop")
  } else {
    const half = Math.ceil(answer.args.length / 2)
    chunk({
      tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: answer.name, arguments: "" } }]
    })
    for (const piece of [answer.args.slice(0, half), answer.args.slice(half)]) {
      chunk({ tool_calls: [{ index: 0, function: { arguments: piece } }] })
    }
    chunk({}, "tool_calls")
  }
  response.write(
    `data: ${JSON.stringify({ ...base(model), object: "chat.completion.chunk", choices: [], usage: USAGE })}\n\n`
  )
  response.end("data: [DONE]\n\n")
}

export interface StubModel {
  /** The OpenAI-style base URL, e.g. `http://127.0.0.1:1234/v1`. */
  readonly baseUrl: string
  readonly requests: Array<Record<string, unknown>>
  readonly close: () => Promise<void>
}

export const startStubModel = async (port = 0): Promise<StubModel> => {
  const requests: Array<Record<string, unknown>> = []
  const server = createServer((request, response) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      if (request.method !== "POST" || !(request.url ?? "").endsWith("/chat/completions")) {
        response.writeHead(404, { "content-type": "application/json" })
        return response.end(JSON.stringify({ error: { message: "The stub answers POST /v1/chat/completions only." } }))
      }
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as Record<string, unknown>
      requests.push(body)
      const model = typeof body["model"] === "string" ? body["model"] : "stub"
      const answer = answerTo(Array.isArray(body["messages"]) ? (body["messages"] as Array<ChatMessage>) : [])
      if (body["stream"] === true) return stream(response, model, answer)
      response.writeHead(200, { "content-type": "application/json" })
      response.end(JSON.stringify(completion(model, answer)))
    })
  })
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve))
  const { port: bound } = server.address() as AddressInfo
  return {
    baseUrl: `http://127.0.0.1:${bound}/v1`,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const stub = await startStubModel(Number(process.argv[2] ?? 0))
  console.log(`stub model listening: ${stub.baseUrl}`)
}
