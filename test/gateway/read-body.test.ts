/**
 * Reading a provider's whole answer for screening (`readBody`) when the
 * answer broke off before the reader looked: the connection dropped while
 * the request's own decision was still being made, so its `error` and
 * `close` events were already emitted. The reader must still answer (502
 * `upstream_error`), not wait for events that will never come: that wait
 * was a request hung for good (test/gateway/odd-answers.test.ts, one run in
 * many on a busy machine).
 */
import { HttpServerResponse } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { PassThrough } from "node:stream"
import { readBody } from "../../src/gateway/GuardrailDecisions.js"

/** What readBody answers for `body`, once it answers. */
const read = (body: PassThrough) =>
  Effect.async<Exit.Exit<Buffer, { readonly code: string }>>((resume) => {
    readBody(HttpServerResponse.raw(body), (exit) => resume(Effect.succeed(exit)))
  })

/** Lets the stream's queued events (error, close) be emitted: they are, before anyone reads it. */
const settled = Effect.promise(() => new Promise((resolve) => setImmediate(resolve)))

describe("readBody", () => {
  it.effect("an answer that broke off before it was read answers upstream_error", () =>
    Effect.gen(function* () {
      const body = new PassThrough()
      body.on("error", () => {})
      body.write('{"id":"x",')
      body.destroy(new Error("aborted"))
      yield* settled
      const exit = yield* read(body)
      expect(Exit.isFailure(exit) && JSON.stringify(exit.cause)).toContain("upstream_error")
    })
  )

  it.effect("an answer that was closed short without an error answers upstream_error too", () =>
    Effect.gen(function* () {
      const body = new PassThrough()
      body.write('{"id":"x",')
      body.destroy()
      yield* settled
      const exit = yield* read(body)
      expect(Exit.isFailure(exit) && JSON.stringify(exit.cause)).toContain("upstream_error")
    })
  )

  it.effect("a whole answer is read whole", () =>
    Effect.gen(function* () {
      const body = new PassThrough()
      body.end('{"id":"x"}')
      const exit = yield* read(body)
      expect(Exit.isSuccess(exit) && exit.value.toString("utf8")).toBe('{"id":"x"}')
    })
  )
})
