/**
 * Bounds on what a gateway client (or its provider) can hold of the service:
 * calls in flight per workspace and per key (429 `too_many_streams` above
 * them, on the fast lane and through the pipeline), the longest a stream may
 * last, the longest SSE line the usage meter holds, and how long a client may
 * take to send its request (slow headers, slow bodies) without that limit
 * touching a long answer going back. Every wait is on a condition (the stub
 * saw the call, a socket closed), never on the machine's speed: the only
 * durations are limits configured on the server under test.
 */
import Anthropic from "@anthropic-ai/sdk"
import { HttpServer } from "@effect/platform"
import { afterAll, expect, layer } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import OpenAI from "openai"
import { clientAt } from "../support/Api.js"
import { eventually } from "../support/Eventually.js"
import { expectError, request, untilServerCloses } from "../support/Raw.js"
import { createKey } from "../support/Tenants.js"
import { SERVER_OPTIONS, TestDatabaseUrl, testServerOver, testServerWithDatabase } from "../support/TestServer.js"
import { awaitUsage, GATEWAY_SETTINGS, gatewayTenant } from "./gateway-helpers.js"
import { NO_NEWLINE_BYTES, startStubUpstream } from "./stub-upstream.js"

const stub = await startStubUpstream()
afterAll(() => stub.close())

const SETTINGS = {
  ...GATEWAY_SETTINGS,
  GATEWAY_MAX_STREAMS_PER_WORKSPACE: "3",
  GATEWAY_MAX_STREAMS_PER_KEY: "2"
}

/**
 * Short request timeouts, on a second process of their own: Node counts them from the connection, so a
 * process stalled that long by a loaded machine would answer 408 to an ordinary request too. They stay
 * well above such stalls, and only the test about them talks to that process.
 */
const SLOW_CLIENT_SETTINGS = { ...SETTINGS, HTTP_HEADERS_TIMEOUT_MS: "2000", HTTP_REQUEST_TIMEOUT_MS: "4000" }

const until = (check: () => boolean, what: string) =>
  eventually(Effect.suspend(() => (check() ? Effect.void : Effect.fail(new Error(`not yet: ${what}`)))))

const chatBody = (model: string) => JSON.stringify({ model, stream: true, messages: [{ role: "user", content: "hi" }] })

/** A stream opened through `url` with `key`: its first chunk read, the rest readable, or left. */
const openStream = (url: string, key: string, model = "hang") =>
  Effect.promise(async () => {
    const controller = new AbortController()
    const response = await fetch(url, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: chatBody(model),
      signal: controller.signal
    })
    if (response.status !== 200) throw new Error(`expected a stream, got ${response.status}: ${await response.text()}`)
    const reader = response.body!.getReader()
    const decoder = new TextDecoder()
    const first = decoder.decode((await reader.read()).value)
    const rest = async () => {
      let text = ""
      for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read())
        text += decoder.decode(chunk.value)
      return text
    }
    return { first, rest, leave: () => controller.abort() }
  })

/** A call that must be refused at a cap: 429 too_many_streams with Retry-After; answers the error's message. */
const expectRefused = (url: string, key: string, init: { chunked?: boolean } = {}) =>
  Effect.gen(function* () {
    const body = chatBody("hang")
    const response = yield* request(url, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      // A chunked body is not the fast lane's: it goes through the full request pipeline.
      ...(init.chunked === true
        ? {
            body: new ReadableStream({
              start: (controller) => {
                controller.enqueue(new TextEncoder().encode(body))
                controller.close()
              }
            }),
            duplex: "half"
          }
        : { body })
    } as RequestInit)
    expect(response.headers.get("retry-after")).toBe("1")
    return expectError(response, 429, "too_many_streams").message
  })

/** The service at `base` answers its liveness probe (200). */
const expectAlive = (base: string) =>
  Effect.gen(function* () {
    const [, response] = yield* (yield* clientAt(base)).system.healthz({ withResponse: true })
    expect(response.status).toBe(200)
  })

const portOf = (context: Context.Context<HttpServer.HttpServer>) => {
  const address = Context.get(context, HttpServer.HttpServer).address
  return `http://127.0.0.1:${address._tag === "TcpAddress" ? address.port : 0}`
}

layer(testServerWithDatabase("database", SETTINGS), SERVER_OPTIONS)("gateway stream limits", (it) => {
  it.effect(
    "calls in flight are capped per key and per workspace (429 with Retry-After); a slot frees when a call ends",
    () =>
      Effect.gen(function* () {
        const { owner, gateway } = yield* gatewayTenant(stub.url)
        const first = yield* createKey(owner)
        const second = yield* createKey(owner)
        const url = `${gateway.routeBase}/chat_style/chat/completions`
        const seenBefore = stub.requests.length

        const a1 = yield* openStream(url, first.plaintext_key)
        const a2 = yield* openStream(url, first.plaintext_key)
        yield* until(() => stub.requests.length === seenBefore + 2, "the provider holds two streams")
        // The first key is at its cap of 2, on the fast lane and through the pipeline alike.
        expect(yield* expectRefused(url, first.plaintext_key)).toContain("GATEWAY_MAX_STREAMS_PER_KEY")
        expect(yield* expectRefused(url, first.plaintext_key, { chunked: true })).toContain(
          "GATEWAY_MAX_STREAMS_PER_KEY"
        )

        // The second key has room, until the workspace's cap of 3.
        const b1 = yield* openStream(url, second.plaintext_key)
        expect(yield* expectRefused(url, second.plaintext_key)).toContain("GATEWAY_MAX_STREAMS_PER_WORKSPACE")
        expect(yield* expectRefused(url, second.plaintext_key, { chunked: true })).toContain(
          "GATEWAY_MAX_STREAMS_PER_WORKSPACE"
        )
        // Refused calls never reached the provider.
        expect(stub.requests.length).toBe(seenBefore + 3)

        // One stream ends (its client leaves): once the provider's call is closed, its slot is free again.
        const abortedBefore = stub.aborted.length
        a1.leave()
        yield* until(() => stub.aborted.length > abortedBefore, "the gateway closed the provider's call")
        const b2 = yield* openStream(url, second.plaintext_key)
        expect(b2.first).toContain("chat.completion.chunk")

        for (const stream of [a2, b1, b2]) stream.leave()
        // All slots come back: the first key can hold two streams again.
        yield* until(() => stub.aborted.length >= abortedBefore + 4, "every provider call closed")
        const again = [yield* openStream(url, first.plaintext_key), yield* openStream(url, first.plaintext_key)]
        for (const stream of again) stream.leave()
      })
  )

  it.effect(
    "a stream line longer than GATEWAY_SSE_MAX_LINE_BYTES ends the stream with an error event; the service answers",
    () =>
      Effect.gen(function* () {
        const { base, db, owner, gateway } = yield* gatewayTenant(stub.url)
        const key = yield* createKey(owner)
        const abortedBefore = stub.aborted.filter((model) => model === "no-newline").length
        // The provider sends 16 MiB without a newline and then holds the stream open.
        const stream = yield* openStream(
          `${gateway.routeBase}/chat_style/chat/completions`,
          key.plaintext_key,
          "no-newline"
        )
        const text = stream.first + (yield* Effect.promise(stream.rest))
        expect(text.length).toBeLessThan(NO_NEWLINE_BYTES / 4)
        const lastEvent = text.slice(text.lastIndexOf("\n\ndata: ") + "\n\ndata: ".length).trim()
        expect(JSON.parse(lastEvent)).toMatchObject({ error: { type: "server_error", code: "sse_line_too_long" } })
        yield* until(
          () => stub.aborted.filter((model) => model === "no-newline").length > abortedBefore,
          "the provider's call closed"
        )
        yield* expectAlive(base)
        const [usage] = yield* awaitUsage(db, owner.workspaceId, 1)
        expect(usage!.metadata).toMatchObject({ stream: true, upstream_error: "sse_line_too_long", cut_short: true })
      })
  )

  it.effect("a client that sends its headers or its body too slowly is cut off (408); a long answer is not", () =>
    Effect.gen(function* () {
      const { owner, gateway } = yield* gatewayTenant(stub.url)
      const key = yield* createKey(owner) // valid on both processes (session tokens are not)
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(
        testServerOver("database", yield* TestDatabaseUrl, SLOW_CLIENT_SETTINGS),
        scope
      )
      const strict = portOf(context)
      // A stream that outlives the request timeout: its answer is held until the slow body below is cut off.
      const stream = yield* openStream(
        `${strict}/v1/gateway/${gateway.routeId}/chat_style/chat/completions`,
        key.plaintext_key,
        "held-stream"
      )

      const slowHeaders = yield* untilServerCloses(strict, "POST /v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\nx-partial: ")
      expect(slowHeaders).toMatch(/^HTTP\/1\.1 408/)
      expect(slowHeaders).toContain('{"error":{"code":"request_timeout"')
      // Opened after the stream began and cut off after HTTP_REQUEST_TIMEOUT_MS: the stream is older than that now.
      const slowBody = yield* untilServerCloses(
        strict,
        'POST /v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{"a":'
      )
      expect(slowBody).toMatch(/^HTTP\/1\.1 408/)

      stub.release()
      const rest = yield* Effect.promise(stream.rest)
      expect(rest).toContain('"usage"')
      expect(rest.trim().endsWith("data: [DONE]")).toBe(true)
      yield* expectAlive(strict)
      yield* Scope.close(scope, Exit.void)
    })
  )

  it.effect(
    "GATEWAY_MAX_STREAM_SECONDS ends a stream with the dialect's error event; the SDKs raise it; usage is recorded",
    () =>
      Effect.gen(function* () {
        const { db, owner, gateway } = yield* gatewayTenant(stub.url)
        const key = yield* createKey(owner) // valid on both processes (session tokens are not)
        const scope = yield* Scope.make()
        const context = yield* Layer.buildWithScope(
          testServerOver("database", yield* TestDatabaseUrl, { ...SETTINGS, GATEWAY_MAX_STREAM_SECONDS: "1" }),
          scope
        )
        const routeBase = `${portOf(context)}/v1/gateway/${gateway.routeId}`

        const openai = new OpenAI({ apiKey: key.plaintext_key, baseURL: `${routeBase}/chat_style`, maxRetries: 0 })
        const chatFailure = yield* Effect.promise(async () => {
          const stream = await openai.chat.completions.create({ model: "hang", stream: true, messages: [] })
          try {
            for await (const _chunk of stream) {
              // read until the gateway ends the stream
            }
            return "ended without an error"
          } catch (error) {
            return String(error)
          }
        })
        expect(chatFailure).toContain("GATEWAY_MAX_STREAM_SECONDS")

        const anthropic = new Anthropic({
          apiKey: key.plaintext_key,
          baseURL: `${routeBase}/messages_style`,
          maxRetries: 0
        })
        const messagesFailure = yield* Effect.promise(async () => {
          const stream = await anthropic.messages.create({ model: "hang", max_tokens: 10, stream: true, messages: [] })
          try {
            for await (const _event of stream) {
              // read until the gateway ends the stream
            }
            return "ended without an error"
          } catch (error) {
            return String(error)
          }
        })
        expect(messagesFailure).toContain("GATEWAY_MAX_STREAM_SECONDS")

        const usage = yield* awaitUsage(db, owner.workspaceId, 2)
        for (const event of usage) {
          expect(event.metadata).toMatchObject({
            stream: true,
            upstream_error: "stream_duration_exceeded",
            cut_short: true
          })
          expect(event.completion_tokens).toBeGreaterThanOrEqual(3)
        }
        yield* Scope.close(scope, Exit.void)
      })
  )
})
