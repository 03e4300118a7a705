/**
 * The gateway's guardrails (docs/gateway.md "Guardrails") on streamed
 * replies, with the official `openai` and `@anthropic-ai/sdk` clients through
 * a route to a stub provider on loopback: streamed text is released in
 * windows and rewritten where a pattern spans chunks; a deny mid-stream ends
 * it with the dialect's error event and aborts the provider call (its usage
 * recorded as cut short); a streamed tool call is decided whole
 * before any of it goes out. Whole (non-streamed) calls are in
 * guardrails-sdk-requests.test.ts.
 */
import { afterAll, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import OpenAI from "openai"
import { createPolicy } from "../support/Events.js"
import { SERVER_OPTIONS, testServerWithDatabase } from "../support/TestServer.js"
import { eventually } from "../support/Eventually.js"
import { awaitUsage, GATEWAY_SETTINGS } from "./gateway-helpers.js"
import { type SdkError, setUpClients } from "./guardrails-sdk-support.js"
import { startStubUpstream, TOOL_CALL } from "./stub-upstream.js"

const stub = await startStubUpstream()
afterAll(() => stub.close())

const setUp = setUpClients(stub.url)

/** Small windows, so a short streamed reply is released in several (a pattern spans 3-character chunks and windows). */
const STREAM_SETTINGS = {
  ...GATEWAY_SETTINGS,
  GATEWAY_GUARDRAIL_WINDOW_CHARS: "20",
  GATEWAY_GUARDRAIL_HOLD_CHARS: "12"
}

/** The text pieces a stream delivered, and the error it ended with (if any). */
const collect = <A>(stream: () => Promise<AsyncIterable<A>>, textOf: (event: A) => string | undefined) =>
  Effect.promise(async () => {
    const pieces: Array<string> = []
    let error: unknown = undefined
    try {
      for await (const event of await stream()) {
        const text = textOf(event)
        if (text !== undefined && text !== "") pieces.push(text)
      }
    } catch (caught) {
      error = caught
    }
    return { pieces, error: error as SdkError | undefined }
  })

layer(testServerWithDatabase("database", STREAM_SETTINGS), SERVER_OPTIONS)("gateway guardrails on streams", (it) => {
  it.effect("streamed text is released in windows, rewritten where a pattern spans chunks", () =>
    Effect.gen(function* () {
      const { base, owner, openai, anthropic } = yield* setUp
      yield* createPolicy(base, owner, "mask-key", { action: "rewrite", value: "sk-live-123", rewrite: "[key]" })
      const text = "Hello there. Your key is sk-live-123, keep it. Nothing else to add here today."
      const chat = yield* collect(
        () =>
          openai.chat.completions.create({
            model: `say:${text}`,
            messages: [{ role: "user", content: "key?" }],
            stream: true
          }),
        (chunk) => chunk.choices[0]?.delta.content ?? undefined
      )
      expect(chat.error).toBeUndefined()
      expect(chat.pieces.join("")).toBe(text.replace("sk-live-123", "[key]"))
      // Released in windows, not chunk by chunk nor all at the end.
      expect(chat.pieces.length).toBeGreaterThan(1)
      expect(chat.pieces.length).toBeLessThan(text.length / 3)

      const messages = yield* collect(
        () =>
          anthropic.messages.create({
            model: `say:${text}`,
            max_tokens: 50,
            messages: [{ role: "user", content: "key?" }],
            stream: true
          }),
        (event) =>
          event.type === "content_block_delta" && event.delta.type === "text_delta" ? event.delta.text : undefined
      )
      expect(messages.error).toBeUndefined()
      expect(messages.pieces.join("")).toBe(text.replace("sk-live-123", "[key]"))
    })
  )

  it.effect("a deny mid-stream ends it with the dialect's error event; nothing of the match went out", () =>
    Effect.gen(function* () {
      const { base, owner, openai, anthropic } = yield* setUp
      yield* createPolicy(base, owner, "no-insult", { value: "stupid" })
      const text = "Fine. Well, I think that this is a stupid idea, really."
      const messages = yield* collect(
        () =>
          anthropic.messages.create({
            model: `say:${text}`,
            max_tokens: 50,
            messages: [{ role: "user", content: "ok?" }],
            stream: true
          }),
        (event) =>
          event.type === "content_block_delta" && event.delta.type === "text_delta" ? event.delta.text : undefined
      )
      expect(messages.error?.message).toContain("guardrail_denied")
      expect(messages.pieces.join("")).not.toContain("stu")
      expect(messages.pieces.join("")).toContain("Fine.")

      const chat = yield* collect(
        () =>
          openai.chat.completions.create({
            model: `say:${text}`,
            messages: [{ role: "user", content: "ok?" }],
            stream: true
          }),
        (chunk) => chunk.choices[0]?.delta.content ?? undefined
      )
      expect(chat.error).toBeInstanceOf(OpenAI.APIError)
      expect(chat.error?.code).toBe("guardrail_denied")
      expect(chat.pieces.join("")).not.toContain("stu")
    })
  )

  it.effect("a deny mid-stream aborts the provider call at once; its usage is recorded as cut short", () =>
    Effect.gen(function* () {
      const { base, db, owner, openai } = yield* setUp
      yield* createPolicy(base, owner, "no-nonsense", { value: "nonsense" })
      // The provider would go on (its stream never ends): the gateway does not wait for it, nor leave it running.
      const model = "odd:say-hold:Fine. Well, this is nonsense and more of it follows."
      const chat = yield* collect(
        () => openai.chat.completions.create({ model, messages: [{ role: "user", content: "ok?" }], stream: true }),
        (chunk) => chunk.choices[0]?.delta.content ?? undefined
      )
      expect(chat.error?.code).toBe("guardrail_denied")
      expect(chat.pieces.join("")).not.toContain("nonsense")
      yield* eventually(
        Effect.suspend(() =>
          stub.aborted.includes(model) ? Effect.void : Effect.fail(new Error("the provider call is still open"))
        )
      )
      const usage = (yield* awaitUsage(db, owner.workspaceId, 1))[0]!
      expect(usage.metadata).toMatchObject({ stream: true, cut_short: true, usage_complete: false })
      expect(usage.completion_tokens).toBeGreaterThan(0)
    })
  )

  it.effect("a streamed tool call is assembled and decided before any of it is released", () =>
    Effect.gen(function* () {
      const { base, owner, openai, anthropic } = yield* setUp
      yield* createPolicy(base, owner, "no-outside-payees", { value: "attacker", target: "params.to" })
      const chat = yield* collect(
        () =>
          openai.chat.completions.create({
            model: "tool-call",
            messages: [{ role: "user", content: "Pay" }],
            stream: true
          }),
        (chunk) => chunk.choices[0]?.delta.tool_calls?.[0]?.function?.arguments ?? undefined
      )
      expect(chat.error?.code).toBe("guardrail_denied")
      expect(chat.pieces).toEqual([])

      const messages = yield* collect(
        () =>
          anthropic.messages.create({
            model: "tool-call",
            max_tokens: 50,
            messages: [{ role: "user", content: "Pay" }],
            stream: true
          }),
        (event) => (event.type === "content_block_start" ? event.content_block.type : undefined)
      )
      expect(messages.error?.message).toContain("guardrail_denied")
      expect(messages.pieces).toEqual([])

      // Allowed: the call goes out whole, in its pieces.
      yield* owner.api.gatewayRoutes.updateGatewayRoute({
        path: { id: (yield* owner.api.gatewayRoutes.listGatewayRoutes({})).gateway_routes[0]!.id },
        payload: { guardrails: { tool_calls: "observe" } }
      })
      const passed = yield* collect(
        () =>
          openai.chat.completions.create({
            model: "tool-call",
            messages: [{ role: "user", content: "Pay" }],
            stream: true
          }),
        (chunk) => chunk.choices[0]?.delta.tool_calls?.[0]?.function?.arguments ?? undefined
      )
      expect(passed.error).toBeUndefined()
      expect(JSON.parse(passed.pieces.join(""))).toEqual(TOOL_CALL.input)
    })
  )
})
