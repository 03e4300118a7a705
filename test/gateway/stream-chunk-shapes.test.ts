/**
 * Streamed answers in the chunk shapes real providers send, through a guarded
 * route with the official `openai` and `@anthropic-ai/sdk` clients: the role
 * on every chunk (Ollama), usage on every chunk (vLLM's continuous usage),
 * several choices in one chunk (`n`), the last text in the chunk with the
 * finish reason, text and a tool call in one chunk, a legacy `function_call`
 * in pieces, content as a list of parts (Mistral); messages style, a block
 * start that carries its text or its tool input. Each is screened: a denied
 * word never reaches the client, and a clean answer arrives whole. Before,
 * any chunk but one choice with nothing but text (or nothing but tool calls)
 * was passed on as it came, unscreened.
 */
import { afterAll, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { createPolicy } from "../support/Events.js"
import { SERVER_OPTIONS, testServerWithDatabase } from "../support/TestServer.js"
import { GATEWAY_SETTINGS } from "./gateway-helpers.js"
import { type SdkError, setUpClients } from "./guardrails-sdk-support.js"
import { CHUNK_SHAPES } from "./stub-odd-answers.js"
import { startStubUpstream } from "./stub-upstream.js"

const stub = await startStubUpstream()
afterAll(() => stub.close())

const WORD = "forbiddenword"
const DENIED = `well, that is a ${WORD} thing to say`
const CLEAN = "All good here. Nothing to see, move along now."

/** A delta's content as text: a string, or (a list of parts, as some providers send) its JSON. */
const textIn = (content: unknown) =>
  typeof content === "string" ? content : content == null ? "" : JSON.stringify(content)

/** What a stream delivered: its text (and tool arguments) by choice, its finish reasons, and the error it ended with. */
const collect = <A>(
  stream: () => Promise<AsyncIterable<A>>,
  piecesOf: (event: A) => Array<[number, string]>,
  finishOf: (event: A) => Array<string> = () => []
) =>
  Effect.promise(async () => {
    const texts = new Map<number, string>()
    const finished: Array<string> = []
    let error: SdkError | undefined = undefined
    try {
      for await (const event of await stream()) {
        for (const [index, piece] of piecesOf(event)) texts.set(index, (texts.get(index) ?? "") + piece)
        finished.push(...finishOf(event))
      }
    } catch (caught) {
      error = caught as SdkError
    }
    return { texts, all: [...texts.values()].join(""), finished, error }
  })

layer(testServerWithDatabase("database", GATEWAY_SETTINGS), SERVER_OPTIONS)("guarded streams, chunk shapes", (it) => {
  it.effect("every chunk shape is screened: a denied word never goes out, a clean answer arrives whole", () =>
    Effect.gen(function* () {
      const { base, owner, openai, anthropic } = yield* setUpClients(stub.url)
      yield* createPolicy(base, owner, "no-word", { value: WORD })
      for (const shape of CHUNK_SHAPES) {
        const run = (text: string) =>
          shape.startsWith("messages-")
            ? collect(
                () =>
                  anthropic.messages.create({
                    model: `odd:shape-${shape}:${text}`,
                    max_tokens: 50,
                    messages: [{ role: "user", content: "hi" }],
                    stream: true
                  }),
                (event): Array<[number, string]> => {
                  if (event.type === "content_block_start") {
                    const block = event.content_block
                    return [
                      [
                        0,
                        block.type === "text"
                          ? block.text
                          : JSON.stringify(block.type === "tool_use" ? block.input : {})
                      ]
                    ]
                  }
                  if (event.type !== "content_block_delta") return []
                  const delta = event.delta
                  return [
                    [
                      0,
                      delta.type === "text_delta"
                        ? delta.text
                        : delta.type === "input_json_delta"
                          ? delta.partial_json
                          : ""
                    ]
                  ]
                }
              )
            : collect(
                () =>
                  openai.chat.completions.create({
                    model: `odd:shape-${shape}:${text}`,
                    messages: [{ role: "user", content: "hi" }],
                    stream: true
                  }),
                (chunk) =>
                  chunk.choices.map((choice): [number, string] => [
                    choice.index,
                    textIn(choice.delta.content) +
                      (choice.delta.tool_calls ?? []).map((call) => call.function?.arguments ?? "").join("") +
                      (choice.delta.function_call?.arguments ?? "")
                  ]),
                (chunk) =>
                  chunk.choices.flatMap((choice) => (choice.finish_reason === null ? [] : [choice.finish_reason]))
              )
        const denied = yield* run(DENIED)
        expect(denied.error?.message ?? `not refused: ${denied.all}`, shape).toContain("guardrail_denied")
        expect(denied.all, shape).not.toContain("forb")

        const clean = yield* run(CLEAN)
        expect(clean.error, shape).toBeUndefined()
        for (const text of clean.texts.values()) expect(text, shape).toContain(CLEAN)
        // The finish reasons that came with the text still reach the client, after it.
        if (!shape.startsWith("messages-")) expect(clean.finished.length, shape).toBe(clean.texts.size)
      }
    })
  )
})
