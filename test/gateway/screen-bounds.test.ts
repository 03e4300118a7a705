/**
 * What one guarded call may make the gateway hold or decide: a provider
 * event that never ends (short lines, no blank line) is cut at
 * GATEWAY_SSE_MAX_LINE_BYTES instead of buffered, and one event past it is
 * not passed on, not even the part before the cut; an answer or a request
 * with more than MAX_SCREENED_ITEMS things to decide is refused instead of
 * decided one by one (each would be a decision with its trace).
 */
import { afterAll, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { MAX_SCREENED_ITEMS } from "../../src/gateway/GuardrailTexts.js"
import { createPolicy } from "../support/Events.js"
import { expectError, request } from "../support/Raw.js"
import { SERVER_OPTIONS, testServerWithDatabase } from "../support/TestServer.js"
import { GATEWAY_SETTINGS, gatewayTenant } from "./gateway-helpers.js"
import { MANY_TOOL_CALLS } from "./stub-odd-answers.js"
import { startStubUpstream } from "./stub-upstream.js"

const stub = await startStubUpstream()
afterAll(() => stub.close())

const MAX_EVENT_BYTES = 64 * 1024

layer(
  testServerWithDatabase("database", { ...GATEWAY_SETTINGS, GATEWAY_SSE_MAX_LINE_BYTES: String(MAX_EVENT_BYTES) }),
  SERVER_OPTIONS
)("guarded route, bounds of one call", (it) => {
  it.effect("an endless event is cut; too many tool calls or tool results are refused, not decided", () =>
    Effect.gen(function* () {
      expect(MANY_TOOL_CALLS).toBeGreaterThan(MAX_SCREENED_ITEMS)
      const { base, owner, gateway } = yield* gatewayTenant(stub.url)
      yield* createPolicy(base, owner, "no-word", { value: "forbiddenword" })
      const send = (body: Record<string, unknown>) =>
        request(`${gateway.routeBase}/chat_style/chat/completions`, {
          method: "POST",
          headers: { authorization: `Bearer ${owner.jwt}`, "content-type": "application/json" },
          body: JSON.stringify(body)
        })
      const hi = [{ role: "user", content: "hi" }]

      const endless = yield* send({ model: "odd:endless-event", stream: true, messages: hi })
      expect(endless.status).toBe(200)
      expect(endless.text).toContain("sse_event_too_long")
      // Cut near the bound, not after the provider's 4 MiB.
      expect(endless.text.length).toBeLessThan(4 * MAX_EVENT_BYTES)

      // One event past the bound, cut by the usage meter: no part of it goes out unscreened.
      const big = yield* send({ model: "odd:big-event:say forbiddenword", stream: true, messages: hi })
      expect(big.status).toBe(200)
      expect(big.text).not.toContain("forbiddenword")
      expect(big.text).toMatch(/sse_(event|line)_too_long/)
      expect(big.text.length).toBeLessThan(4 * MAX_EVENT_BYTES)

      expectError(yield* send({ model: "odd:many-tools", messages: hi }), 502, "too_many_screened_items")
      const streamed = yield* send({ model: "odd:many-tools-sse", stream: true, messages: hi })
      expect(streamed.text).toContain("too_many_screened_items")
      expect(streamed.text).not.toContain(`"call_${MAX_SCREENED_ITEMS}"`)

      // Request side: the tool results after the last assistant turn are each a decision.
      const seen = stub.requests.length
      const calls = [...Array(MANY_TOOL_CALLS).keys()].map((index) => ({
        id: `call_${index}`,
        type: "function",
        function: { name: "lookup", arguments: "{}" }
      }))
      const results = calls.map((call) => ({ role: "tool", tool_call_id: call.id, content: "result" }))
      const many = yield* send({
        model: "say:fine",
        messages: [...hi, { role: "assistant", content: null, tool_calls: calls }, ...results]
      })
      expectError(many, 400, "too_many_screened_items")
      expect(stub.requests.length, "the provider is not called").toBe(seen)
      const few = yield* send({
        model: "say:fine",
        messages: [...hi, { role: "assistant", content: null, tool_calls: calls.slice(0, 3) }, ...results.slice(0, 3)]
      })
      expect(few.status, few.text).toBe(200)
      expect((yield* request(`${base}/healthz`)).status).toBe(200)
    })
  )
})
