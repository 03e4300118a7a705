/**
 * `guardrail-service/ai-sdk`: the service as a language-model middleware of
 * the Vercel AI SDK (`ai` 5, `wrapLanguageModel({ model, middleware })`):
 * - the prompt's newest user message is decided as `input.received`, and the tool results since the
 *   model's last turn as `tool.result`, before the model is called (a `rewrite` replaces them);
 * - each text of the answer is decided as `output.proposed` (a `rewrite` replaces it), and each
 *   proposed tool call (operation: the tool's name) before the SDK can run it; with
 *   `requirePermitReceipt` a call also needs a verified permit receipt.
 * Streaming included: a text block is held until it ends and is decided whole (then sent as one delta,
 * or not at all), and a tool call is decided before it is passed on. A blocking decision throws
 * `GuardrailDenied` (a stream answers it as an `error` part), carrying the decision and its findings.
 */
import type {
  LanguageModelV2CallOptions,
  LanguageModelV2Content,
  LanguageModelV2Middleware,
  LanguageModelV2Prompt,
  LanguageModelV2StreamPart,
  LanguageModelV2ToolResultOutput
} from "@ai-sdk/provider"
import {
  authorizeToolCall,
  blocks,
  GuardrailDenied,
  type GuardrailAdapterOptions,
  paramsOf,
  rewrittenText,
  screen,
  textOf
} from "./Screening.js"

export { GuardrailDenied, type GuardrailAdapterOptions } from "./Screening.js"

type Message = LanguageModelV2Prompt[number]

/** Decides `content` of `kind`; answers the text to use (the same, or rewritten), or throws when it blocks. */
const decideText = async (
  options: GuardrailAdapterOptions,
  kind: "input.received" | "output.proposed" | "tool.result",
  operation: string,
  content: string
) => {
  const decision = await screen(options, kind, { operation, content })
  if (blocks(options, decision)) throw new GuardrailDenied(decision, kind === "output.proposed" ? "the reply" : kind)
  return rewrittenText(decision) ?? content
}

const outputText = (output: LanguageModelV2ToolResultOutput) =>
  output.type === "content"
    ? output.value.map((part) => (part.type === "text" ? part.text : "")).join("\n")
    : textOf(output.value)

/** The prompt with its newest user message and newest tool results decided (and rewritten where so decided). */
const screenPrompt = async (options: GuardrailAdapterOptions, prompt: LanguageModelV2Prompt) => {
  const last = prompt.at(-1)
  const lastAssistant = prompt.map((message) => message.role).lastIndexOf("assistant")
  return Promise.all(
    prompt.map(async (message, index): Promise<Message> => {
      if (message.role === "user" && message === last) {
        const content = await Promise.all(
          message.content.map(async (part) =>
            part.type === "text"
              ? { ...part, text: await decideText(options, "input.received", "user_message", part.text) }
              : part
          )
        )
        return { ...message, content }
      }
      if (message.role === "tool" && index > lastAssistant) {
        const content = await Promise.all(
          message.content.map(async (part) => {
            const text = outputText(part.output)
            const screened = await decideText(options, "tool.result", part.toolName, text)
            return screened === text ? part : { ...part, output: { type: "text" as const, value: screened } }
          })
        )
        return { ...message, content }
      }
      return message
    })
  )
}

/** One part of a generated answer, decided: a text (maybe rewritten) or a tool call the SDK may run. */
const screenContent = async (
  options: GuardrailAdapterOptions,
  part: LanguageModelV2Content
): Promise<LanguageModelV2Content> => {
  if (part.type === "text") return { ...part, text: await decideText(options, "output.proposed", "reply", part.text) }
  if (part.type === "tool-call" && part.providerExecuted !== true) {
    await authorizeToolCall(options, part.toolName, paramsOf(part.input))
  }
  return part
}

/** A stream whose texts are held and decided whole, and whose tool calls are decided before they pass. */
const screenStream = (options: GuardrailAdapterOptions) => {
  const held = new Map<string, { start: LanguageModelV2StreamPart; text: string }>()
  return new TransformStream<LanguageModelV2StreamPart, LanguageModelV2StreamPart>({
    transform: async (part, controller) => {
      try {
        switch (part.type) {
          case "text-start":
            held.set(part.id, { start: part, text: "" })
            return
          case "text-delta": {
            const block = held.get(part.id)
            if (block === undefined) return controller.enqueue(part)
            block.text += part.delta
            return
          }
          case "text-end": {
            const block = held.get(part.id)
            if (block === undefined) return controller.enqueue(part)
            held.delete(part.id)
            const text = await decideText(options, "output.proposed", "reply", block.text)
            controller.enqueue(block.start)
            if (text !== "") controller.enqueue({ type: "text-delta", id: part.id, delta: text })
            return controller.enqueue(part)
          }
          case "tool-call":
            if (part.providerExecuted !== true) await authorizeToolCall(options, part.toolName, paramsOf(part.input))
            return controller.enqueue(part)
          default:
            return controller.enqueue(part)
        }
      } catch (error) {
        controller.enqueue({ type: "error", error })
      }
    }
  })
}

/** The middleware: `wrapLanguageModel({ model, middleware: guardrailMiddleware({ client }) })`. */
export const guardrailMiddleware = (options: GuardrailAdapterOptions): LanguageModelV2Middleware => ({
  middlewareVersion: "v2",
  transformParams: async ({ params }): Promise<LanguageModelV2CallOptions> => ({
    ...params,
    prompt: await screenPrompt(options, params.prompt)
  }),
  wrapGenerate: async ({ doGenerate }) => {
    const result = await doGenerate()
    const content = await Promise.all(result.content.map((part) => screenContent(options, part)))
    return { ...result, content }
  },
  wrapStream: async ({ doStream }) => {
    const result = await doStream()
    return { ...result, stream: result.stream.pipeThrough(screenStream(options)) }
  }
})
