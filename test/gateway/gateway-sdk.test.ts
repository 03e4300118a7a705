/**
 * The gateway as its users see it, over HTTP against the real service, with
 * a stub provider on loopback: the official `openai` and `@anthropic-ai/sdk`
 * clients (streaming and not) through a route, what the provider receives
 * (its own key, the body unchanged), the usage events with their costs,
 * upstream failures (502/504), and a client leaving mid-stream.
 */
import Anthropic from "@anthropic-ai/sdk"
import { afterAll, describe, expect, layer } from "@effect/vitest"
import { HttpServer } from "@effect/platform"
import { Context, Effect, Exit, Fiber, Layer, Scope } from "effect"
import OpenAI from "openai"
import { usageGroupsOf, usageRecordsOf } from "../billing/billing-helpers.js"
import { eventually } from "../support/Eventually.js"
import { call, expectError } from "../support/Raw.js"
import { createKey, tenant } from "../support/Tenants.js"
import {
  baseUrl,
  SERVER_OPTIONS,
  TestDatabaseUrl,
  testServerOver,
  testServerWithDatabase
} from "../support/TestServer.js"
import {
  awaitUsage,
  GATEWAY_SETTINGS,
  gatewayTenant,
  PROVIDER_KEY,
  setBudget,
  setPrice,
  setupGateway
} from "./gateway-helpers.js"
import { HANG_INPUT_TOKENS, startStubUpstream, USAGE } from "./stub-upstream.js"

const stub = await startStubUpstream()
afterAll(() => stub.close())

const lastRequest = () => stub.requests[stub.requests.length - 1]!

const stubTenant = gatewayTenant(stub.url)

layer(testServerWithDatabase("database", GATEWAY_SETTINGS), SERVER_OPTIONS)("gateway with the official SDKs", (it) => {
  describe("chat_style with the openai client", () => {
    it.effect(
      "answers a completion, sends the provider key upstream and the body unchanged, records priced usage",
      () =>
        Effect.gen(function* () {
          const { db, owner, gateway } = yield* stubTenant
          const key = yield* createKey(owner)
          yield* setPrice(owner, "  Stub-Chat ", 100_000, 300_000)

          const client = new OpenAI({
            apiKey: key.plaintext_key,
            baseURL: `${gateway.routeBase}/chat_style`,
            maxRetries: 0
          })
          const request = {
            model: "Stub-Chat",
            messages: [{ role: "user" as const, content: "Say hello" }],
            temperature: 0.2
          }
          const completion = yield* Effect.promise(() => client.chat.completions.create(request))
          expect(completion.choices[0]!.message.content).toBe("Hello!")
          expect(completion.usage?.prompt_tokens).toBe(USAGE.chat.prompt_tokens)

          const seen = lastRequest()
          expect(seen.path).toBe("/chat/completions")
          expect(seen.headers["authorization"]).toBe(`Bearer ${PROVIDER_KEY}`)
          expect(seen.headers["x-service-workspace-id"]).toBeUndefined()
          expect(seen.body).toEqual(request)

          const [usage] = yield* awaitUsage(db, owner.workspaceId, 1)
          // (12 x 100000 + 3 x 300000) cents per million tokens = 2.1 cents = 21,000,000 nanos.
          expect(usage).toMatchObject({
            schema_version: 1,
            workspace_id: owner.workspaceId,
            kind: "customer_inference",
            model: "Stub-Chat",
            api_key_id: key.api_key.id,
            principal_id: key.api_key.id,
            prompt_tokens: 12,
            completion_tokens: 3,
            currency: "usd",
            cost_usd_nanos: "21000000",
            cost_minor: 2,
            unpriced: false,
            agent_id: "support-bot"
          })
          expect(usage!.request_id).toMatch(/\S/)
          expect(usage!.metadata).toMatchObject({ dialect: "chat_style", route_id: gateway.routeId, stream: false })

          // The stream worker stores it: GET /v1/llm-usage lists it and sums it by model.
          const listed = yield* eventually(
            Effect.flatMap(owner.api.llmUsage.listLlmUsage({ urlParams: {} }), (answer) => {
              const { events } = usageRecordsOf(answer)
              return events.length === 1 ? Effect.succeed(events[0]!) : Effect.fail(new Error(JSON.stringify(answer)))
            }),
            "20 seconds"
          )
          expect(listed).toMatchObject({ model: "Stub-Chat", prompt_tokens: 12, completion_tokens: 3, cost_minor: 2 })
          const grouped = usageGroupsOf(yield* owner.api.llmUsage.listLlmUsage({ urlParams: { group_by: "model" } }))
          expect(grouped).toMatchObject({
            group_by: "model",
            groups: [
              { prompt_tokens: 12, completion_tokens: 3, cost_minor: 2, cost_usd_nanos: "21000000", event_count: 1 }
            ]
          })
        })
    )

    it.effect("streams chunk by chunk and asks the provider for stream usage", () =>
      Effect.gen(function* () {
        const { db, owner, gateway } = yield* stubTenant
        const client = new OpenAI({ apiKey: owner.jwt, baseURL: `${gateway.routeBase}/chat_style`, maxRetries: 0 })

        const pieces = yield* Effect.promise(async () => {
          const stream = await client.chat.completions.create({
            model: "stub-chat-unpriced",
            messages: [{ role: "user", content: "Say hello" }],
            stream: true
          })
          const out: Array<string> = []
          for await (const chunk of stream) out.push(chunk.choices[0]?.delta?.content ?? "")
          return out
        })
        expect(pieces.join("")).toBe("Hello!")
        expect(lastRequest().body["stream_options"]).toEqual({ include_usage: true })

        const [usage] = yield* awaitUsage(db, owner.workspaceId, 1)
        expect(usage).toMatchObject({
          principal_id: owner.user_id,
          api_key_id: null,
          prompt_tokens: 12,
          completion_tokens: 3,
          cost_minor: 0,
          cost_usd_nanos: "0",
          unpriced: true
        })
        expect(usage!.metadata).toMatchObject({ stream: true, usage_complete: true, cut_short: false })
      })
    )
  })

  describe("messages_style with the @anthropic-ai/sdk client", () => {
    it.effect(
      "answers a message (the client's own apiKey, sent as x-api-key) with x-api-key and anthropic-version upstream",
      () =>
        Effect.gen(function* () {
          const { db, owner, gateway } = yield* stubTenant
          const key = yield* createKey(owner)
          yield* setPrice(owner, "stub-claude", 300, 1500)
          // Configured the way Anthropic's docs show: the runtime key as apiKey (x-api-key header).
          const client = new Anthropic({
            apiKey: key.plaintext_key,
            baseURL: `${gateway.routeBase}/messages_style`,
            maxRetries: 0
          })

          const message = yield* Effect.promise(() =>
            client.messages.create({
              model: "stub-claude",
              max_tokens: 64,
              messages: [{ role: "user", content: "Hi" }]
            })
          )
          expect(message.content[0]).toMatchObject({ type: "text", text: "Hello!" })
          const seen = lastRequest()
          expect(seen.path).toBe("/v1/messages")
          expect(seen.headers["x-api-key"]).toBe(PROVIDER_KEY)
          expect(seen.headers["authorization"]).toBeUndefined()
          // The client's anthropic-version is passed on (the gateway sets 2023-06-01 only when there is none).
          expect(seen.headers["anthropic-version"]).toMatch(/^\d{4}-\d{2}-\d{2}$/)
          expect(seen.body).toEqual({
            model: "stub-claude",
            max_tokens: 64,
            messages: [{ role: "user", content: "Hi" }]
          })

          const [usage] = yield* awaitUsage(db, owner.workspaceId, 1)
          // 15 x 300 + 7 x 1500 = 15,000 -> x 10 nanos.
          expect(usage).toMatchObject({
            prompt_tokens: 15,
            completion_tokens: 7,
            cost_usd_nanos: "150000",
            cost_minor: 0
          })
        })
    )

    it.effect("streams events and counts cumulative message_delta usage once", () =>
      Effect.gen(function* () {
        const { db, owner, gateway } = yield* stubTenant
        const client = new Anthropic({
          authToken: owner.jwt,
          baseURL: `${gateway.routeBase}/messages_style`,
          maxRetries: 0
        })

        const text = yield* Effect.promise(async () => {
          const stream = client.messages.stream({
            model: "stub-claude",
            max_tokens: 64,
            messages: [{ role: "user", content: "Hi" }]
          })
          const final = await stream.finalMessage()
          return final.content.map((block) => (block.type === "text" ? block.text : "")).join("")
        })
        expect(text).toBe("Hello!")
        expect(lastRequest().body["stream"]).toBe(true)
        const [usage] = yield* awaitUsage(db, owner.workspaceId, 1)
        // message_start says output 1, message_delta says 7 in total: 7, not 8.
        expect(usage).toMatchObject({ prompt_tokens: 15, completion_tokens: 7 })
      })
    )
  })

  describe("upstream failures", () => {
    it.effect(
      "5xx with a body is 502 with that body; without one, the conventions' error body; 401 upstream is 502",
      () =>
        Effect.gen(function* () {
          const { base, owner, gateway } = yield* stubTenant
          const path = `/v1/gateway/${gateway.routeId}/chat_style/chat/completions`
          const send = (model: string) => call(base, "POST", path, { token: owner.jwt, body: { model, messages: [] } })

          const withBody = yield* send("fail-500")
          expect(withBody.status).toBe(502)
          expect(withBody.body).toEqual({ error: { message: "stub upstream exploded", type: "server_error" } })

          expectError(yield* send("fail-500-empty"), 502, "upstream_error")
          expectError(yield* send("fail-401"), 502, "provider_auth_failed")

          const plain = yield* call(base, "POST", `/v1/gateway/${gateway.routeId}/messages_style/v1/messages`, {
            token: owner.jwt,
            body: { model: "stub-claude", max_tokens: 5, messages: [] }
          })
          expect(plain.status, plain.text).toBe(200)
          expect(lastRequest().headers["anthropic-version"]).toBe("2023-06-01")
        })
    )

    it.effect("an unreachable provider is 502, one that does not answer 504 (after GATEWAY_UPSTREAM_TIMEOUT_MS)", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const closed = yield* setupGateway(base, owner, "http://127.0.0.1:9")
        expectError(
          yield* call(base, "POST", `/v1/gateway/${closed.routeId}/chat_style/chat/completions`, {
            token: owner.jwt,
            body: { model: "x", messages: [] }
          }),
          502,
          "upstream_unreachable"
        )
        const gateway = yield* setupGateway(base, owner, stub.url)
        // A second process over the same data with a short upstream timeout; the stub holds its answer
        // until released, so the timeout fires however fast or slow the machine is.
        const db = yield* TestDatabaseUrl
        const scope = yield* Scope.make()
        const context = yield* Layer.buildWithScope(
          testServerOver("database", db, { ...GATEWAY_SETTINGS, GATEWAY_UPSTREAM_TIMEOUT_MS: "300" }),
          scope
        )
        const address = Context.get(context, HttpServer.HttpServer).address
        const impatient = `http://127.0.0.1:${address._tag === "TcpAddress" ? address.port : 0}`
        const key = yield* createKey(owner) // valid on both processes (session tokens are not)
        const timedOut = expectError(
          yield* call(impatient, "POST", `/v1/gateway/${gateway.routeId}/messages_style/v1/messages`, {
            token: key.plaintext_key,
            body: { model: "slow", max_tokens: 5, messages: [] }
          }),
          504,
          "upstream_timeout"
        )
        expect(timedOut.message).toContain("300 ms")
        stub.release()
        yield* Scope.close(scope, Exit.void)
      })
    )

    it.effect("bad requests never reach the provider: unknown route 404, non-object body 400, malformed JSON 400", () =>
      Effect.gen(function* () {
        const { base, owner, gateway } = yield* stubTenant
        const before = stub.requests.length
        expectError(
          yield* call(base, "POST", `/v1/gateway/gwr_nope/chat_style/chat/completions`, {
            token: owner.jwt,
            body: { model: "x" }
          }),
          404,
          "gateway_route_not_found"
        )
        const path = `/v1/gateway/${gateway.routeId}/chat_style/chat/completions`
        expectError(yield* call(base, "POST", path, { token: owner.jwt, body: [1, 2] }), 400, "validation_failed")
        expectError(
          yield* call(base, "POST", path, { token: owner.jwt, body: { messages: [] } }),
          400,
          "validation_failed"
        )
        expectError(yield* call(base, "POST", path, { token: owner.jwt, raw: "{nope" }), 400, "malformed_json")
        expectError(yield* call(base, "POST", path, { body: { model: "x" } }), 401)
        expect(stub.requests.length).toBe(before)
      })
    )
  })

  describe("budgets at the gateway", () => {
    it.effect(
      "refuses an unpriced model under an active budget (402 model_unpriced), and a spent budget (402 budget_exceeded)",
      () =>
        Effect.gen(function* () {
          const { base, db, owner, gateway } = yield* stubTenant
          const path = `/v1/gateway/${gateway.routeId}/chat_style/chat/completions`
          yield* setBudget(owner, 1, "day")
          const before = stub.requests.length

          const unpriced = expectError(
            yield* call(base, "POST", path, { token: owner.jwt, body: { model: "no-price", messages: [] } }),
            402,
            "model_unpriced"
          )
          expect(unpriced.message).toContain("no-price")
          expect(stub.requests.length).toBe(before)

          // 12 x 1,000,000 cents per million = 12 cents: one soft call overshoots the 1-cent cap, then the budget is spent.
          yield* setPrice(owner, "stub-chat", 1_000_000, 0)
          const soft = yield* call(base, "POST", path, { token: owner.jwt, body: { model: "stub-chat", messages: [] } })
          expect(soft.status, soft.text).toBe(200)
          yield* awaitUsage(db, owner.workspaceId, 1)
          const refused = yield* eventually(
            Effect.flatMap(
              call(base, "POST", path, { token: owner.jwt, body: { model: "stub-chat", messages: [] } }),
              (response) => (response.status === 402 ? Effect.succeed(response) : Effect.fail(response.text))
            )
          )
          const error = expectError(refused, 402, "budget_exceeded")
          const tomorrow = new Date()
          tomorrow.setUTCHours(24, 0, 0, 0)
          expect(error.details).toEqual([{ path: "reset_at", message: tomorrow.toISOString() }])
          expect(error.message).toContain(tomorrow.toISOString())

          // Strict: max_tokens whose worst case exceeds what is left is refused too.
          expectError(
            yield* call(base, "POST", path, {
              token: owner.jwt,
              body: { model: "stub-chat", max_tokens: 5, messages: [] }
            }),
            402,
            "budget_exceeded"
          )
          // Without the budget, the same request passes (settings reach the gateway within its 1 s cache).
          yield* setBudget(owner, null)
          yield* eventually(
            Effect.flatMap(
              call(base, "POST", path, { token: owner.jwt, body: { model: "stub-chat", messages: [] } }),
              (response) => (response.status === 200 ? Effect.void : Effect.fail(response.text))
            ),
            "30 seconds"
          )
        })
    )
  })

  describe("a client that leaves before the answer", () => {
    it.effect("aborts the upstream call while the provider is still thinking", () =>
      Effect.gen(function* () {
        const { owner, gateway } = yield* stubTenant
        const abortedBefore = stub.aborted.filter((model) => model === "slow").length
        const requestsBefore = stub.requests.length
        const controller = new AbortController()
        const outcome = Effect.promise(() =>
          fetch(`${gateway.routeBase}/chat_style/chat/completions`, {
            method: "POST",
            headers: { authorization: `Bearer ${owner.jwt}`, "content-type": "application/json" },
            body: JSON.stringify({ model: "slow", messages: [] }),
            signal: controller.signal
          }).then(
            (response) => `answered ${response.status}`,
            () => "gave up"
          )
        )
        const leaving = yield* Effect.fork(outcome)
        // The provider has the request (and holds its answer until released); then the client leaves.
        yield* eventually(
          Effect.suspend(() =>
            stub.requests.length > requestsBefore ? Effect.void : Effect.fail(new Error("upstream not called yet"))
          )
        )
        controller.abort()
        expect(yield* Fiber.join(leaving)).toBe("gave up")
        // The provider sees its connection closed: only the client leaving can have closed it (the upstream
        // timeout is minutes, and the stub answers only when released).
        yield* eventually(
          Effect.suspend(() =>
            stub.aborted.filter((model) => model === "slow").length > abortedBefore
              ? Effect.void
              : Effect.fail(new Error("upstream not aborted"))
          )
        )
      })
    )
  })

  describe("a client that leaves mid-stream", () => {
    it.effect("aborts the upstream call and still records the tokens seen", () =>
      Effect.gen(function* () {
        const { db, owner, gateway } = yield* stubTenant
        const abortedBefore = stub.aborted.length

        const firstChunk = yield* Effect.promise(async () => {
          const controller = new AbortController()
          const response = await fetch(`${gateway.routeBase}/messages_style/v1/messages`, {
            method: "POST",
            headers: { authorization: `Bearer ${owner.jwt}`, "content-type": "application/json" },
            body: JSON.stringify({ model: "hang", max_tokens: 100, stream: true, messages: [] }),
            signal: controller.signal
          })
          const reader = response.body!.getReader()
          const { value } = await reader.read()
          controller.abort()
          return new TextDecoder().decode(value)
        })
        expect(firstChunk).toContain("message_start")

        // The provider sees its connection closed.
        yield* eventually(
          Effect.suspend(() =>
            stub.aborted.length > abortedBefore ? Effect.void : Effect.fail(new Error("upstream not aborted"))
          ),
          "30 seconds"
        )
        const [usage] = yield* awaitUsage(db, owner.workspaceId, 1)
        expect(usage!.prompt_tokens).toBe(HANG_INPUT_TOKENS)
        expect(usage!.completion_tokens).toBeGreaterThanOrEqual(1)
        expect(usage!.metadata).toMatchObject({ stream: true, usage_complete: false, cut_short: true })
      })
    )
  })
})
