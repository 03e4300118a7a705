/**
 * The gateway over HTTP against the real service when things go wrong, with
 * a stub provider on loopback: upstream failures (502/504) and bad requests
 * that never reach the provider, budgets enforced at the gateway (402), and a
 * client that leaves before the answer or mid-stream (the upstream call is
 * aborted, the tokens seen are still recorded). The official clients' happy
 * paths are in gateway-sdk-clients.test.ts.
 */
import { afterAll, describe, expect, layer } from "@effect/vitest"
import { HttpServer } from "@effect/platform"
import { Context, Effect, Exit, Fiber, Layer, Scope } from "effect"
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
import { awaitUsage, GATEWAY_SETTINGS, gatewayTenant, setBudget, setPrice, setupGateway } from "./gateway-helpers.js"
import { HANG_INPUT_TOKENS, startStubUpstream } from "./stub-upstream.js"

const stub = await startStubUpstream()
afterAll(() => stub.close())

const lastRequest = () => stub.requests[stub.requests.length - 1]!

const stubTenant = gatewayTenant(stub.url)

layer(testServerWithDatabase("database", GATEWAY_SETTINGS), SERVER_OPTIONS)("gateway with the official SDKs", (it) => {
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
