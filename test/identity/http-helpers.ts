/**
 * Helpers of the identity HTTP suites: a typed-client call together with the
 * raw answer it decoded (`withRaw`), the outcome of a call compared with
 * others (`answerOf`), and requests from a chosen loopback address
 * (`postFrom`). Shared helpers live in test/support.
 */
import type { HttpClientResponse } from "@effect/platform"
import { expect } from "@effect/vitest"
import { Cause, Effect, Exit, Option } from "effect"
import { request as httpRequest } from "node:http"
import { type HttpError, isHttpError, statusOf } from "../../src/http/Errors.js"

// ---------------------------------------------------------------- typed calls, with what they decoded

export interface WithRaw<A> {
  /** What the typed client decoded. */
  readonly value: A
  readonly status: number
  readonly headers: HttpClientResponse.HttpClientResponse["headers"]
  /** The answer's body as sent, before decoding (which drops fields the contract does not name). */
  readonly text: string
  /** `text` parsed as JSON (undefined for an empty body). */
  readonly body: unknown
}

/**
 * Runs a typed-client call made with `withResponse: true`; answers the decoded
 * value beside the raw answer, for checks decoding would hide (the exact keys
 * of a body, a secret that must not appear anywhere in it, an empty 204 body).
 */
export const withRaw = <A, E, R>(call: Effect.Effect<[A, HttpClientResponse.HttpClientResponse], E, R>) =>
  Effect.gen(function* () {
    const [value, response] = yield* call
    // The client decoded the body from its (cached) array buffer.
    const text = new TextDecoder().decode(yield* response.arrayBuffer)
    return {
      value,
      status: response.status,
      headers: response.headers,
      text,
      body: text === "" ? undefined : (JSON.parse(text) as unknown)
    } satisfies WithRaw<A>
  })

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

// ---------------------------------------------------------------- kept for test/http/fast-lane.test.ts

// fast-lane.test.ts (being changed elsewhere) still imports these from here; they are the shared helpers
// of test/support. Drop them once it imports test/support directly.
export { tenant, type Tenant } from "../support/Tenants.js"
export { SERVER_OPTIONS } from "../support/TestServer.js"
