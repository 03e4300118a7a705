/**
 * The gateway's guardrails (docs/gateway.md "Guardrails") as its users see
 * them on whole (non-streamed) calls, with the official `openai` and
 * `@anthropic-ai/sdk` clients through a route to a stub provider on loopback:
 * a denied input never reaches the provider and the SDK raises
 * `guardrail_denied`; a rewritten input or tool result reaches it rewritten;
 * a reply is rewritten or refused; a proposed tool call is refused; `observe`
 * passes and records; `off` decides nothing; the decision headers. Streamed
 * replies are in guardrails-sdk-streams.test.ts.
 */
import Anthropic from "@anthropic-ai/sdk"
import { afterAll, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import OpenAI from "openai"
import { upsertTool } from "../authorization-http/event-helpers.js"
import { createPolicy } from "../support/Events.js"
import { expectValidation, request } from "../support/Raw.js"
import { SERVER_OPTIONS, testServerWithDatabase } from "../support/TestServer.js"
import { awaitUsage, GATEWAY_SETTINGS } from "./gateway-helpers.js"
import { denyInputs, INJECTION, raised, type SdkError, setUpClients } from "./guardrails-sdk-support.js"
import { startStubUpstream, TOOL_CALL } from "./stub-upstream.js"

const stub = await startStubUpstream()
afterAll(() => stub.close())

const lastRequest = () => stub.requests[stub.requests.length - 1]!

const setUp = setUpClients(stub.url)

layer(testServerWithDatabase("database", GATEWAY_SETTINGS), SERVER_OPTIONS)("gateway guardrails", (it) => {
  it.effect("a denied input is never sent upstream; both SDKs raise guardrail_denied with the trace", () =>
    Effect.gen(function* () {
      const { base, owner, openai, anthropic } = yield* setUp
      yield* denyInputs(base, owner)
      const before = stub.requests.length

      const chat = (yield* raised(() =>
        openai.chat.completions.create({
          model: "stub-chat",
          messages: [{ role: "user", content: `Please ${INJECTION} and wire the money.` }]
        })
      )) as SdkError
      expect(chat).toBeInstanceOf(OpenAI.APIError)
      expect([chat.status, chat.code]).toEqual([403, "guardrail_denied"])
      expect(chat.error["trace_id"]).toMatch(/^trc_/)
      expect((chat.error["findings"] as ReadonlyArray<{ policy_id: string }>)[0]!.policy_id).toBe("no-override")

      const messages = (yield* raised(() =>
        anthropic.messages.create({
          model: "stub-messages",
          max_tokens: 50,
          messages: [{ role: "user", content: [{ type: "text", text: `Now ${INJECTION}.` }] }]
        })
      )) as SdkError
      expect(messages).toBeInstanceOf(Anthropic.PermissionDeniedError)
      expect(messages.status).toBe(403)
      expect(messages.message).toContain("guardrail_denied")
      expect(messages.error).toMatchObject({
        type: "error",
        error: { type: "permission_error", code: "guardrail_denied" }
      })

      expect(stub.requests.length).toBe(before)
    })
  )

  it.effect("a rewrite sends the transformed text upstream; earlier turns are not decided again; headers", () =>
    Effect.gen(function* () {
      const { base, owner, openai } = yield* setUp
      yield* createPolicy(base, owner, "mask-code", {
        action: "rewrite",
        value: "SECRET-42",
        rewrite: "[code]",
        appliesTo: ["input.received", "tool.result"]
      })
      const { data, response } = yield* Effect.promise(() =>
        openai.chat.completions
          .create({
            model: "stub-chat",
            messages: [
              // Before the last assistant turn: decided when it was new, passed as it is now.
              { role: "user", content: "Look up SECRET-42" },
              {
                role: "assistant",
                content: null,
                tool_calls: [{ id: "call_9", type: "function", function: { name: "lookup", arguments: "{}" } }]
              },
              { role: "tool", tool_call_id: "call_9", content: "Found SECRET-42 in the vault." },
              { role: "user", content: [{ type: "text", text: "My code is SECRET-42." }] }
            ]
          })
          .withResponse()
      )
      expect(data.choices[0]!.message.content).toBe("Hello!")
      const sent = lastRequest().body["messages"] as ReadonlyArray<{ content: unknown }>
      expect(sent.map((message) => message.content)).toEqual([
        "Look up SECRET-42",
        null,
        "Found [code] in the vault.",
        [{ type: "text", text: "My code is [code]." }]
      ])
      expect(response.headers.get("x-guardrail-effect")).toBe("rewrite")
      expect(response.headers.get("x-guardrail-trace-id")).toMatch(/^trc_/)
      expect(response.headers.get("x-guardrail-receipt-id")).toMatch(/^rcpt_/)
      // The output decision rides in the body.
      const guardrail = (data as unknown as { guardrail: { decisions: ReadonlyArray<Record<string, unknown>> } })
        .guardrail
      expect(guardrail.decisions).toMatchObject([{ kind: "output.proposed", operation: "reply", effect: "permit" }])
    })
  )

  it.effect("a reply is rewritten (messages style) or refused with its usage recorded (chat style)", () =>
    Effect.gen(function* () {
      const { base, db, owner, openai, anthropic } = yield* setUp
      yield* createPolicy(base, owner, "mask-key", { action: "rewrite", value: "sk-live-123", rewrite: "[key]" })
      yield* createPolicy(base, owner, "no-insult", { value: "stupid" })

      const rewritten = yield* Effect.promise(() =>
        anthropic.messages.create({
          model: "say:Your key is sk-live-123.",
          max_tokens: 50,
          messages: [{ role: "user", content: "What is my key?" }]
        })
      )
      expect(rewritten.content).toEqual([{ type: "text", text: "Your key is [key]." }])
      expect((rewritten as unknown as { guardrail: unknown }).guardrail).toMatchObject({
        decisions: [{ operation: "reply", effect: "rewrite", mode: "enforce" }]
      })

      const refused = (yield* raised(() =>
        openai.chat.completions.create({
          model: "say:That is a stupid question.",
          messages: [{ role: "user", content: "Why?" }]
        })
      )) as SdkError
      expect([refused.status, refused.code]).toEqual([403, "guardrail_denied"])
      // The provider answered (and was paid): both calls are recorded.
      yield* awaitUsage(db, owner.workspaceId, 2)
    })
  )

  it.effect("a proposed tool call is decided on its name and parsed arguments; a deny refuses the answer", () =>
    Effect.gen(function* () {
      const { base, owner, openai, anthropic } = yield* setUp
      yield* createPolicy(base, owner, "no-outside-payees", { value: "attacker", target: "params.to" })

      const chat = (yield* raised(() =>
        openai.chat.completions.create({ model: "tool-call", messages: [{ role: "user", content: "Pay my bill" }] })
      )) as SdkError
      expect([chat.status, chat.code]).toEqual([403, "guardrail_denied"])
      expect(chat.message).toContain(TOOL_CALL.name)

      const messages = (yield* raised(() =>
        anthropic.messages.create({
          model: "tool-call",
          max_tokens: 50,
          messages: [{ role: "user", content: "Pay my bill" }]
        })
      )) as SdkError
      expect(messages.status).toBe(403)
      expect(messages.message).toContain("guardrail_denied")

      // With tool calls off on the route, the same answer passes (the reply text is still decided).
      yield* owner.api.gatewayRoutes.updateGatewayRoute({
        path: { id: (yield* owner.api.gatewayRoutes.listGatewayRoutes({})).gateway_routes[0]!.id },
        payload: { guardrails: { tool_calls: "off" } }
      })
      const passed = yield* Effect.promise(() =>
        openai.chat.completions.create({ model: "tool-call", messages: [{ role: "user", content: "Pay my bill" }] })
      )
      expect(passed.choices[0]!.message.tool_calls?.[0]).toMatchObject({ function: { name: TOOL_CALL.name } })
    })
  )

  it.effect("a tool call that asks for approval is deferred: guardrail_deferred carries the approval", () =>
    Effect.gen(function* () {
      const { base, owner, anthropic } = yield* setUp
      yield* upsertTool(base, owner, {
        tool: TOOL_CALL.name,
        reversible: false,
        side_effect: "payment",
        approval: true
      })
      yield* owner.api.settings.updateSettings({ payload: { approval_checker_mode: "enforce" } })
      const deferred = (yield* raised(() =>
        anthropic.messages.create({ model: "tool-call", max_tokens: 50, messages: [{ role: "user", content: "Pay" }] })
      )) as SdkError
      expect(deferred.status).toBe(403)
      const error = deferred.error["error"] as Record<string, unknown>
      expect(error).toMatchObject({ type: "permission_error", code: "guardrail_deferred" })
      expect(error["approval"]).not.toBeNull()
      expect(error["trace_id"]).toMatch(/^trc_/)
    })
  )

  it.effect("observe decides and records, and never changes the traffic", () =>
    Effect.gen(function* () {
      const { base, owner, gateway, openai } = yield* setUp
      yield* denyInputs(base, owner)
      yield* owner.api.gatewayRoutes.updateGatewayRoute({
        path: { id: gateway.routeId },
        payload: { guardrails: { input: "observe" } }
      })
      const text = `Please ${INJECTION}.`
      const { data, response } = yield* Effect.promise(() =>
        openai.chat.completions
          .create(
            { model: "stub-chat", messages: [{ role: "user", content: text }] },
            { headers: { "x-guardrail-session-id": "sess-observe-1", "x-guardrail-run-id": "run-observe-1" } }
          )
          .withResponse()
      )
      expect(data.choices[0]!.message.content).toBe("Hello!")
      expect(lastRequest().body["messages"]).toEqual([{ role: "user", content: text }])
      expect(response.headers.get("x-guardrail-effect")).toBe("permit")
      const traceId = response.headers.get("x-guardrail-trace-id")

      const { traces } = yield* owner.api.traces.listTraces({ urlParams: { session_id: "sess-observe-1" } })
      const trace = traces.find((one) => one.trace_id === traceId)
      expect(trace).toBeDefined()
      expect(trace!.run_id).toBe("run-observe-1")
      const payload = trace!.payload as {
        request: { kind: string; metadata: Record<string, unknown> }
        response: { findings: ReadonlyArray<{ policy_id: string; evidence: { observed_only?: boolean } }> }
      }
      expect(payload.request.kind).toBe("input.received")
      expect(payload.request.metadata).toMatchObject({ source: "gateway", route_id: gateway.routeId })
      expect(payload.response.findings.map((f) => [f.policy_id, f.evidence.observed_only])).toEqual([
        ["no-override", true]
      ])
    })
  )

  it.effect("a route with its guardrails off decides nothing; a workspace with nothing to match neither", () =>
    Effect.gen(function* () {
      const { base, owner, gateway, openai } = yield* setUp
      // Nothing in the workspace could match: no decision, no trace.
      const quiet = yield* Effect.promise(() =>
        openai.chat.completions
          .create({ model: "stub-chat", messages: [{ role: "user", content: `Please ${INJECTION}.` }] })
          .withResponse()
      )
      expect(quiet.response.headers.get("x-guardrail-effect")).toBe("none")

      yield* denyInputs(base, owner)
      yield* owner.api.gatewayRoutes.updateGatewayRoute({
        path: { id: gateway.routeId },
        payload: { guardrails: { input: "off", output: "off", tool_calls: "off" } }
      })
      const off = yield* Effect.promise(() =>
        openai.chat.completions
          .create({ model: "stub-chat", messages: [{ role: "user", content: `Please ${INJECTION}.` }] })
          .withResponse()
      )
      expect(off.data.choices[0]!.message.content).toBe("Hello!")
      expect(off.response.headers.get("x-guardrail-effect")).toBe("off")
      expect(off.response.headers.get("x-guardrail-trace-id")).toBeNull()
      expect((off.data as unknown as { guardrail?: unknown }).guardrail).toBeUndefined()
      expect((yield* owner.api.traces.listTraces({ urlParams: {} })).traces).toEqual([])
    })
  )

  it.effect("a run or session header past 200 characters is 400 on every route, decided or not", () =>
    Effect.gen(function* () {
      const { base, owner, gateway } = yield* setUp
      const send = (headers: Record<string, string>) =>
        request(`${gateway.routeBase}/chat_style/chat/completions`, {
          method: "POST",
          headers: { authorization: `Bearer ${owner.jwt}`, "content-type": "application/json", ...headers },
          body: JSON.stringify({ model: "stub-chat", messages: [{ role: "user", content: "hi" }] })
        })
      const long = "r".repeat(201)
      const check = (label: string) =>
        Effect.gen(function* () {
          for (const name of ["x-guardrail-run-id", "x-guardrail-session-id"]) {
            const refused = yield* send({ [name]: long })
            expectValidation(refused, name)
            expect(refused.headers.get("x-guardrail-effect"), label).toBe("none")
            expect((yield* send({ [name]: "r".repeat(200) })).status, label).toBe(200)
          }
        })
      // Before, a route that decides nothing (nothing could match, or all off) took any value without a word.
      yield* check("nothing to match")
      yield* denyInputs(base, owner)
      yield* check("decided")
      yield* owner.api.gatewayRoutes.updateGatewayRoute({
        path: { id: gateway.routeId },
        payload: { guardrails: { input: "off", output: "off", tool_calls: "off" } }
      })
      yield* check("all off")
    })
  )
})
