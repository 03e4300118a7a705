/**
 * What the gateway's guardrails tell and change on the way back, with the
 * official clients through a route to a stub provider on loopback: a tool
 * call rewritten (its arguments redacted before the client sees them, stream
 * or not), a stream's decisions in its last SSE event (`event: guardrail`,
 * after what the SDKs read), and the decision headers on the gateway's own
 * error answers.
 */
import Anthropic from "@anthropic-ai/sdk"
import { afterAll, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import OpenAI from "openai"
import { queryDatabase } from "../support/Database.js"
import { createPolicy } from "../support/Events.js"
import { SERVER_OPTIONS, testServerWithDatabase } from "../support/TestServer.js"
import { GATEWAY_SETTINGS, gatewayTenant } from "./gateway-helpers.js"
import { startStubUpstream, TOOL_CALL } from "./stub-upstream.js"

const stub = await startStubUpstream()
afterAll(() => stub.close())

const REDACTED = { ...TOOL_CALL.input, to: "[payee]-account" }

/** A tenant with a route to the stub, both clients on it, and a rewrite of the payee in tool-call arguments. */
const setUp = Effect.gen(function* () {
  const tenant = yield* gatewayTenant(stub.url)
  const { base, gateway, owner } = tenant
  yield* createPolicy(base, owner, "mask-payee", { action: "rewrite", value: "attacker", rewrite: "[payee]" })
  const openai = new OpenAI({ apiKey: owner.jwt, baseURL: `${gateway.routeBase}/chat_style`, maxRetries: 0 })
  const anthropic = new Anthropic({ apiKey: owner.jwt, baseURL: `${gateway.routeBase}/messages_style`, maxRetries: 0 })
  return { ...tenant, openai, anthropic }
})

/** The SSE events of a raw streamed answer, each as [event name or null, data]. */
const sseEvents = (text: string) =>
  text
    .split("\n\n")
    .filter((event) => event.trim() !== "")
    .map((event) => {
      const lines = event.trim().split("\n")
      const name =
        lines
          .find((line) => line.startsWith("event:"))
          ?.slice(6)
          .trim() ?? null
      const data = lines
        .filter((line) => line.startsWith("data:"))
        .map((line) => line.slice(5).trim())
        .join("\n")
      return [name, data] as const
    })

layer(testServerWithDatabase("database", GATEWAY_SETTINGS), SERVER_OPTIONS)("gateway guardrails on answers", (it) => {
  it.effect("a rewritten tool call reaches the client with its arguments redacted (chat and messages)", () =>
    Effect.gen(function* () {
      const { openai, anthropic } = yield* setUp
      const chat = yield* Effect.promise(() =>
        openai.chat.completions.create({ model: "tool-call", messages: [{ role: "user", content: "Pay my bill" }] })
      )
      const call = chat.choices[0]!.message.tool_calls?.[0]
      expect(call?.type === "function" ? JSON.parse(call.function.arguments) : undefined).toEqual(REDACTED)
      expect((chat as unknown as { guardrail: unknown }).guardrail).toMatchObject({
        decisions: expect.arrayContaining([
          expect.objectContaining({ operation: TOOL_CALL.name, effect: "rewrite", mode: "enforce" })
        ])
      })

      const messages = yield* Effect.promise(() =>
        anthropic.messages.create({ model: "tool-call", max_tokens: 50, messages: [{ role: "user", content: "Pay" }] })
      )
      const block = messages.content.find((one) => one.type === "tool_use")
      expect(block?.type === "tool_use" ? block.input : undefined).toEqual(REDACTED)
    })
  )

  it.effect("a streamed tool call is released rewritten, whole, to both SDKs", () =>
    Effect.gen(function* () {
      const { openai, anthropic } = yield* setUp
      const chat = yield* Effect.promise(async () => {
        let args = ""
        const stream = await openai.chat.completions.create({
          model: "tool-call",
          messages: [{ role: "user", content: "Pay" }],
          stream: true
        })
        for await (const chunk of stream) args += chunk.choices[0]?.delta.tool_calls?.[0]?.function?.arguments ?? ""
        return args
      })
      expect(JSON.parse(chat)).toEqual(REDACTED)

      const message = yield* Effect.promise(() =>
        anthropic.messages
          .stream({ model: "tool-call", max_tokens: 50, messages: [{ role: "user", content: "Pay" }] })
          .finalMessage()
      )
      const block = message.content.find((one) => one.type === "tool_use")
      expect(block?.type === "tool_use" ? block.input : undefined).toEqual(REDACTED)
    })
  )

  it.effect("a stream ends with an `event: guardrail` naming its decisions, after [DONE]", () =>
    Effect.gen(function* () {
      const { gateway, owner } = yield* setUp
      const response = yield* Effect.promise(() =>
        fetch(`${gateway.routeBase}/chat_style/chat/completions`, {
          method: "POST",
          headers: { authorization: `Bearer ${owner.jwt}`, "content-type": "application/json" },
          body: JSON.stringify({
            model: "say:All good here.",
            stream: true,
            messages: [{ role: "user", content: "Hi" }]
          })
        })
      )
      expect(response.status).toBe(200)
      expect(response.headers.get("x-guardrail-effect")).toBe("permit")
      const events = sseEvents(yield* Effect.promise(() => response.text()))
      const done = events.findIndex(([, data]) => data === "[DONE]")
      expect(done).toBeGreaterThan(0)
      expect(events.length).toBe(done + 2)
      const [name, data] = events[events.length - 1]!
      expect(name).toBe("guardrail")
      const { guardrail } = JSON.parse(data) as { guardrail: { decisions: Array<Record<string, unknown>> } }
      expect(guardrail.decisions.length).toBeGreaterThan(0)
      for (const decision of guardrail.decisions) {
        expect(decision).toMatchObject({ kind: "output.proposed", operation: "reply", effect: "permit" })
        expect(String(decision["trace_id"])).not.toBe("")
      }
    })
  )

  it.effect("a permit that cannot be recorded stands as a defer: the provider's answer is not passed on", () =>
    Effect.gen(function* () {
      const { db, openai, owner } = yield* setUp
      // The database refuses this workspace's traces (as a full disk or a lost primary would).
      yield* queryDatabase(
        db,
        `create or replace function refuse_traces() returns trigger language plpgsql as $$
         begin if new.workspace_id = '${owner.workspaceId}' then raise exception 'refused for the test'; end if; return new; end $$`
      )
      yield* queryDatabase(
        db,
        "create trigger refuse_traces before insert on traces for each row execute function refuse_traces()"
      )
      try {
        const error = yield* Effect.promise(() =>
          openai.chat.completions
            .create({ model: "say:The answer.", messages: [{ role: "user", content: "Hi" }] })
            .then(
              () => undefined,
              (raised: unknown) => raised
            )
        )
        expect(error).toBeInstanceOf(OpenAI.APIError)
        expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(403)
        expect((error as InstanceType<typeof OpenAI.APIError>).code).toBe("guardrail_deferred")
        expect((error as Error).message).toContain("could not be recorded")
      } finally {
        yield* queryDatabase(db, "drop trigger refuse_traces on traces")
      }
    })
  )

  it.effect("the gateway's own error answers carry the request-side decision's headers", () =>
    Effect.gen(function* () {
      const { gateway, owner } = yield* setUp
      const post = (body: string, headers: Record<string, string> = {}) =>
        Effect.promise(() =>
          fetch(`${gateway.routeBase}/chat_style/chat/completions`, {
            method: "POST",
            headers: { authorization: `Bearer ${owner.jwt}`, "content-type": "application/json", ...headers },
            body
          })
        )
      // Decided (permitted), then the provider fails: the 5xx still names the decision.
      const failed = yield* post(JSON.stringify({ model: "fail-500", messages: [{ role: "user", content: "Hi" }] }))
      expect(failed.status).toBeGreaterThanOrEqual(500)
      expect(failed.headers.get("x-guardrail-effect")).toBe("permit")
      expect(failed.headers.get("x-guardrail-trace-id")).toMatch(/\S/)
      expect(failed.headers.get("x-guardrail-receipt-id")).toMatch(/\S/)

      // Refused before anything was decided: the 400 says so.
      const badScope = yield* post(JSON.stringify({ model: "m", messages: [{ role: "user", content: "Hi" }] }), {
        "x-guardrail-run-id": "x".repeat(300)
      })
      expect(badScope.status).toBe(400)
      expect(badScope.headers.get("x-guardrail-effect")).toBe("none")
      expect(((yield* Effect.promise(() => badScope.json())) as { error: { code: string } }).error.code).toBe(
        "validation_failed"
      )
    })
  )
})
