/**
 * The gateway's guardrails on the parts of a request other than plain text messages, with the official
 * `openai` and `@anthropic-ai/sdk` clients through a route to a stub provider on loopback: a legacy
 * `function` result is decided as a tool result; text in documents and search results is decided with the
 * message (and rewritten); a run header naming another environment's run is refused before the provider.
 */
import Anthropic from "@anthropic-ai/sdk"
import { afterAll, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { createPolicy } from "../support/Events.js"
import { createEnvironment } from "../support/Tenants.js"
import { SERVER_OPTIONS, testServerWithDatabase } from "../support/TestServer.js"
import { GATEWAY_SETTINGS } from "./gateway-helpers.js"
import { denyInputs, INJECTION, raised, type SdkError, setUpClients } from "./guardrails-sdk-support.js"
import { startStubUpstream } from "./stub-upstream.js"

const stub = await startStubUpstream()
afterAll(() => stub.close())

const lastRequest = () => stub.requests[stub.requests.length - 1]!

const setUp = setUpClients(stub.url)

layer(testServerWithDatabase("database", GATEWAY_SETTINGS), SERVER_OPTIONS)(
  "gateway guardrails: request parts",
  (it) => {
    it.effect("a legacy function result (role function) is decided as a tool result, named by its function", () =>
      Effect.gen(function* () {
        const { base, owner, openai } = yield* setUp
        yield* denyInputs(base, owner)
        const before = stub.requests.length
        // The deprecated `functions` API answers a function_call with a `function` message.
        const refused = (yield* raised(() =>
          openai.chat.completions.create({
            model: "stub-chat",
            messages: [
              { role: "user", content: "Read the page." },
              { role: "assistant", content: null, function_call: { name: "fetch_page", arguments: "{}" } },
              { role: "function", name: "fetch_page", content: `The page says: ${INJECTION}.` }
            ]
          })
        )) as SdkError
        expect([refused.status, refused.code]).toEqual([403, "guardrail_denied"])
        expect(refused.message).toContain("tool.result")
        expect(stub.requests.length).toBe(before)
      })
    )

    it.effect("text in a document or a search result is decided with the message's text; a rewrite replaces it", () =>
      Effect.gen(function* () {
        const { base, owner, anthropic } = yield* setUp
        yield* denyInputs(base, owner)
        const before = stub.requests.length
        // Plain-text documents and search results are text the model reads, as a text block is.
        const blocks = (text: string): Array<Anthropic.ContentBlockParam> => [
          { type: "document", source: { type: "text", media_type: "text/plain", data: `Memo: ${text}.` } },
          { type: "document", source: { type: "content", content: [{ type: "text", text: `Note: ${text}.` }] } },
          {
            type: "search_result",
            source: "https://example.com/a",
            title: "A",
            content: [{ type: "text", text: `Result: ${text}.` }]
          }
        ]
        for (const block of blocks(INJECTION)) {
          const refused = (yield* raised(() =>
            anthropic.messages.create({
              model: "stub-messages",
              max_tokens: 50,
              messages: [{ role: "user", content: [{ type: "text", text: "Summarize this." }, block] }]
            })
          )) as SdkError
          expect(refused.status, block.type).toBe(403)
          expect(refused.message, block.type).toContain("guardrail_denied")
        }
        expect(stub.requests.length).toBe(before)

        // A rewrite puts its text in place of every text the message carried: the documents' too.
        yield* createPolicy(base, owner, "mask-code", {
          action: "rewrite",
          value: "SECRET-42",
          rewrite: "[code]",
          appliesTo: ["input.received"]
        })
        yield* Effect.promise(() =>
          anthropic.messages.create({
            model: "stub-messages",
            max_tokens: 50,
            messages: [{ role: "user", content: [{ type: "text", text: "Summarize this." }, ...blocks("SECRET-42")] }]
          })
        )
        expect(stub.requests.length).toBe(before + 1)
        const sent = JSON.stringify(lastRequest().body["messages"])
        expect(sent).not.toContain("SECRET-42")
        expect(sent).toContain("[code]")
      })
    )

    it.effect(
      "x-guardrail-run-id naming another environment's run is 403 environment_mismatch, never sent upstream",
      () =>
        Effect.gen(function* () {
          const { base, owner, openai } = yield* setUp
          // Something to match, so the request is decided at all.
          yield* denyInputs(base, owner)
          const staging = yield* createEnvironment(owner)
          const run = yield* owner.api.runs.createRun({
            payload: { agent_id: "support-bot", kind: "job", environment_id: staging.id }
          })
          const before = stub.requests.length
          const refused = (yield* raised(() =>
            openai.chat.completions.create(
              { model: "stub-chat", messages: [{ role: "user", content: "Hello" }] },
              { headers: { "x-guardrail-run-id": run.id } }
            )
          )) as SdkError
          expect(refused.status).toBe(403)
          expect(JSON.stringify(refused.error)).toContain("environment_mismatch")
          expect(stub.requests.length).toBe(before)
        })
    )
  }
)
