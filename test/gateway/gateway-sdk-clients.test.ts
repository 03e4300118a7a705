/**
 * The gateway as its users see it, over HTTP against the real service, with
 * a stub provider on loopback: the official `openai` and `@anthropic-ai/sdk`
 * clients (streaming and not) through a route, what the provider receives
 * (its own key, the body unchanged), and the usage events with their costs.
 * Upstream failures (502/504), budgets at the gateway and a client leaving
 * early are in gateway-sdk-failures.test.ts.
 */
import Anthropic from "@anthropic-ai/sdk"
import { afterAll, describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import OpenAI from "openai"
import { usageGroupsOf, usageRecordsOf } from "../billing/billing-helpers.js"
import { eventually } from "../support/Eventually.js"
import { createKey } from "../support/Tenants.js"
import { SERVER_OPTIONS, testServerWithDatabase } from "../support/TestServer.js"
import { awaitUsage, GATEWAY_SETTINGS, gatewayTenant, PROVIDER_KEY, setPrice } from "./gateway-helpers.js"
import { startStubUpstream, USAGE } from "./stub-upstream.js"

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
})
