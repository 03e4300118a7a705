/**
 * A guarded route against answers a careless or hostile provider sends: a
 * content type in capitals, plain text, a JSON answer to a streamed request,
 * SSE with lone-CR line ends or CRLF split across chunks, JSON nested past
 * what is decided, a success status other than 200, a legacy `function_call`, an event that is not JSON. Each is screened (the policy's word is refused) or, when
 * it cannot be screened, refused with 502; none passes unseen or answers 500.
 */
import { afterAll, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { createPolicy } from "../support/Events.js"
import { expectError, request } from "../support/Raw.js"
import { SERVER_OPTIONS, testServerWithDatabase } from "../support/TestServer.js"
import { GATEWAY_SETTINGS, gatewayTenant } from "./gateway-helpers.js"
import { startStubUpstream } from "./stub-upstream.js"

const stub = await startStubUpstream()
afterAll(() => stub.close())

const WORD = "forbiddenword"

/** The reply text a chat stream released to the client (its content deltas, joined). */
const released = (stream: string) =>
  [...stream.matchAll(/"delta":\{(?:"role":"assistant",)?"content":"((?:[^"\\]|\\.)*)"/g)]
    .map((match) => match[1])
    .join("")

layer(testServerWithDatabase("database", GATEWAY_SETTINGS), SERVER_OPTIONS)("guarded route, odd answers", (it) => {
  it.effect("each odd answer is screened or refused (502 answer_not_screenable); none passes unseen", () =>
    Effect.gen(function* () {
      const { base, owner, gateway } = yield* gatewayTenant(stub.url)
      yield* createPolicy(base, owner, "no-word", { value: WORD })
      const send = (model: string, stream = false) =>
        request(`${gateway.routeBase}/chat_style/chat/completions`, {
          method: "POST",
          headers: { authorization: `Bearer ${owner.jwt}`, "content-type": "application/json" },
          body: JSON.stringify({ model, stream, messages: [{ role: "user", content: "hi" }] })
        })

      expectError(yield* send(`odd:upper-json:say ${WORD}`), 403, "guardrail_denied")
      // Asked to stream, answered with JSON: screened as JSON all the same.
      expectError(yield* send(`odd:upper-json:say ${WORD}`, true), 403, "guardrail_denied")
      const fine = yield* send("odd:upper-json:all good")
      expect(fine.status, fine.text).toBe(200)
      expect(fine.text).toContain('"guardrail"')

      expectError(yield* send(`odd:plain:say ${WORD}`), 502, "answer_not_screenable")
      expectError(yield* send("odd:deep"), 502, "answer_not_screenable")

      for (const kind of ["cr-sse", "split-crlf-sse"]) {
        const streamed = yield* send(`odd:${kind}:say ${WORD} now`, true)
        expect(released(streamed.text), kind).toBe("")
        expect(streamed.text, kind).toContain("guardrail_denied")
        const clean = yield* send(`odd:${kind}:all good here`, true)
        expect(released(clean.text), kind).toBe("all good here")
        expect(clean.text, kind).toContain('"decisions":[{')
      }
      // An event whose data is not JSON cannot be screened: the stream ends there, and none of it goes out.
      const garbled = yield* send(`odd:garbled-sse:say ${WORD}`, true)
      expect(garbled.text).not.toContain(WORD)
      expect(garbled.text).toContain("answer_not_screenable")
      // The legacy `function_call` (the deprecated `functions` API) is a tool call like the others.
      expectError(yield* send(`odd:legacy-function:say ${WORD}`), 403, "guardrail_denied")
      const legacy = yield* send("odd:legacy-function:all good")
      expect(legacy.status, legacy.text).toBe(200)
      expect(legacy.text).toContain('"operation":"lookup"')
      // Any 2xx is a success to the SDKs (openai and Anthropic read the body of 201 or 203 as the answer): screened too.
      for (const status of [201, 203, 299]) {
        expectError(yield* send(`odd:status-${status}:say ${WORD}`), 403, "guardrail_denied")
        const streamed = yield* send(`odd:status-${status}-sse:say ${WORD} now`, true)
        expect(released(streamed.text), String(status)).toBe("")
        expect(streamed.text, String(status)).toContain("guardrail_denied")
        const clean = yield* send(`odd:status-${status}:all good`)
        expect(clean.status, clean.text).toBe(status)
        expect(clean.text).toContain('"guardrail"')
      }
      // A body that breaks off short of its Content-Length: refused when screened, cut (not hung) when passed.
      expectError(yield* send("odd:broken-length"), 502)
      yield* owner.api.gatewayRoutes.updateGatewayRoute({
        path: { id: gateway.routeId },
        payload: { guardrails: { input: "off", output: "off", tool_calls: "off" } }
      })
      const passed = yield* Effect.promise(() =>
        fetch(`${gateway.routeBase}/chat_style/chat/completions`, {
          method: "POST",
          headers: { authorization: `Bearer ${owner.jwt}`, "content-type": "application/json" },
          body: JSON.stringify({ model: "odd:broken-length", messages: [] })
        }).then(
          (response) =>
            response.text().then(
              () => "whole",
              () => "cut"
            ),
          () => "cut"
        )
      )
      expect(passed).toBe("cut")
      expect((yield* request(`${base}/healthz`)).status).toBe(200)
    })
  )
})
