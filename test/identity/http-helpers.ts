/**
 * Helpers of the identity HTTP suites: the outcome of a call compared with
 * others (`answerOf`), and requests from a chosen loopback address
 * (`postFrom`). Shared helpers live in test/support.
 */
import { expect } from "@effect/vitest"
import { Cause, Effect, Exit, Option } from "effect"
import { request as httpRequest } from "node:http"
import { type HttpError, isHttpError, statusOf } from "../../src/http/Errors.js"

// ---------------------------------------------------------------- outcomes of calls

export interface Answer<A = unknown> {
  readonly status: number
  /** What the call answered; undefined when it failed. */
  readonly value: A | undefined
  /** The HTTP error the call failed with; undefined when it succeeded. */
  readonly error: HttpError | undefined
}

/**
 * Runs an API call whose outcome a test compares with others (concurrent
 * calls, tables of credentials): answers `ok`, the success status the
 * endpoint declares (the client refuses any other), or the status of the
 * HTTP error it failed with, beside that error. Any other failure fails the test.
 */
export const answerOf = <A, E, R>(call: Effect.Effect<A, E, R>, ok: number) =>
  Effect.gen(function* () {
    const exit = yield* Effect.exit(call)
    if (Exit.isSuccess(exit)) return { status: ok, value: exit.value, error: undefined } satisfies Answer<A>
    const failure = Cause.failureOption(exit.cause)
    if (Option.isSome(failure) && isHttpError(failure.value)) {
      return { status: statusOf(failure.value), value: undefined, error: failure.value } satisfies Answer<A>
    }
    return expect.fail(`expected an HTTP answer, got ${Cause.pretty(exit.cause)}`)
  })

/** A one-line account of an answer for assertion messages. */
export const describeAnswer = ({ error, status }: Answer<unknown>) =>
  error === undefined ? `${status}` : `${status} ${error.code}: ${error.message}`

// ---------------------------------------------------------------- raw requests from a chosen address

export interface RawResponse {
  readonly status: number
  readonly headers: Record<string, string | Array<string> | undefined>
  readonly text: string
  readonly body: unknown
}

/**
 * A JSON POST over node:http from the given local (loopback) address, so a
 * test can be several client addresses at once (the typed client cannot pick
 * its source address). Fails after 15 s.
 */
export const postFrom = (base: string, localAddress: string, path: string, body: unknown) =>
  Effect.async<RawResponse, Error>((resume) => {
    const url = new URL(base)
    const payload = JSON.stringify(body)
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        method: "POST",
        path,
        localAddress,
        headers: { "content-type": "application/json", "content-length": String(Buffer.byteLength(payload)) },
        timeout: 15_000,
        agent: false
      },
      (res) => {
        const chunks: Array<Buffer> = []
        res.on("data", (chunk: Buffer) => chunks.push(chunk))
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString()
          let parsed: unknown = text
          try {
            parsed = JSON.parse(text)
          } catch {
            // not JSON
          }
          resume(Effect.succeed({ status: res.statusCode ?? 0, headers: res.headers, text, body: parsed }))
        })
        res.on("error", (error) => resume(Effect.fail(error)))
      }
    )
    req.on("timeout", () => req.destroy(new Error("no answer within 15 s")))
    req.on("error", (error) => resume(Effect.fail(error)))
    req.write(payload)
    req.end()
  })
