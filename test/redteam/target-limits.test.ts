/**
 * Limits of calling a red-team target (src/redteam/Targets.ts): an answer
 * is read as a stream and the call aborted past 256 KB (a 100 MB answer is
 * never held in memory), a redirect is not followed, and requests are spaced
 * per workspace, whatever target URLs it names. Loopback stubs only.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer, TestClock } from "effect"
import { AppConfig } from "../../src/platform/Config.js"
import { OutboundGuard, Resolver } from "../../src/platform/OutboundGuard.js"
import { callTarget, makeRateLimiter, MAX_RESPONSE_BYTES } from "../../src/redteam/Targets.js"
import { bigAnswerServer, loopbackServer, scriptedResolver } from "../platform/outbound-helpers.js"
import { configLayer } from "../support/TestPlatform.js"

const guardLayer = OutboundGuard.Default.pipe(
  Layer.provide(AppConfig.Default),
  Layer.provide(configLayer({ HTTP_URL_ALLOWLIST: "127.0.0.1" })),
  Layer.provide(Layer.succeed(Resolver, scriptedResolver({}).resolver))
)

const messages = [{ role: "user" as const, content: "hello" }]

describe("red-team target calls", () => {
  it.scoped("a 100 MB answer is aborted at the byte cap while streaming", () =>
    Effect.gen(function* () {
      const total = 100 * 1024 * 1024
      const target = yield* bigAnswerServer(total)
      const outbound = yield* OutboundGuard
      const error = yield* Effect.flip(
        callTarget({ outbound, workspaceId: "ws_big" }, `http://127.0.0.1:${target.port}/chat`, messages, "rts_1")
      )
      expect(error.message).toContain("too large")
      expect(error.message).toContain(String(MAX_RESPONSE_BYTES))
      // The target saw its connection closed after a small part of its answer.
      expect(yield* target.closedEarly).toBeLessThan(total / 10)
    }).pipe(Effect.provide(guardLayer))
  )

  it.scoped("a redirecting target is an error, and the redirect is not followed", () =>
    Effect.gen(function* () {
      const sink = yield* loopbackServer(200)
      const redirector = yield* loopbackServer(307, `http://127.0.0.1:${sink.port}/chat`)
      const outbound = yield* OutboundGuard
      const error = yield* Effect.flip(
        callTarget(
          { outbound, workspaceId: "ws_redirect" },
          `http://127.0.0.1:${redirector.port}/chat`,
          messages,
          "rts_2"
        )
      )
      expect(error.message).toContain("redirect")
      expect(redirector.seen).toHaveLength(1)
      expect(sink.seen).toEqual([])
    }).pipe(Effect.provide(guardLayer))
  )

  it.effect(
    "the target rate limit is per workspace (callTarget keys it by workspace): another workspace is not held up",
    () =>
      Effect.gen(function* () {
        const limit = makeRateLimiter(10) // one slot per 100 ms
        // Workspace A: its first request goes at once, the next waits for the next slot.
        yield* limit("ws_a")
        const second = yield* Effect.fork(limit("ws_a"))
        // Workspace B is not delayed by A's slots.
        yield* limit("ws_b")
        yield* TestClock.adjust("99 millis")
        expect(second.unsafePoll()).toBeNull()
        yield* TestClock.adjust("1 millis")
        yield* Fiber.join(second)
      })
  )

  it.effect("past 10,000 keys a key whose slot is ahead keeps it: its next request still waits", () =>
    Effect.gen(function* () {
      const limit = makeRateLimiter(10)
      yield* limit("ws_busy")
      // Over ten thousand other keys, each going once.
      for (let i = 0; i < 10_001; i++) yield* limit(`ws_${i}`)
      yield* TestClock.adjust("50 millis")
      // ws_busy's next slot is still 50 ms ahead: its next request waits for it, even as the map is trimmed.
      const next = yield* Effect.fork(limit("ws_busy"))
      yield* TestClock.adjust("49 millis")
      expect(next.unsafePoll()).toBeNull()
      yield* TestClock.adjust("1 millis")
      yield* Fiber.join(next)
    })
  )
})
