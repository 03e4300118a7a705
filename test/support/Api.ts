/**
 * The contract's typed client (src/client/Client.ts) for tests, the check of
 * an error answer, and the raw answer behind a typed call (`withRaw`). HTTP
 * suites call the API through it; requests
 * the contract cannot express (malformed bodies, wrong media types, hostile
 * headers) go through `call` in Raw.ts.
 */
import type { HttpClientResponse } from "@effect/platform"
import { expect } from "@effect/vitest"
import { Cause, Effect, Exit, Option } from "effect"
import { type GuardrailClient, guardrailClient } from "../../src/client/Client.js"
import { type HttpError, isHttpError, statusOf } from "../../src/http/Errors.js"

export type { GuardrailClient } from "../../src/client/Client.js"

/** Whoever calls the API: a tenant, a member, a runtime key's client. */
export interface Caller {
  readonly api: GuardrailClient
}

export interface Credential {
  /** A session JWT, a runtime key or the internal key. */
  readonly token?: string | undefined
  /** Acts in this workspace (`x-service-workspace-id`), for a user of several. */
  readonly workspace?: string | undefined
  readonly headers?: Readonly<Record<string, string>> | undefined
}

/** The typed client at `base` with `credential` (none: anonymous). */
export const clientAt = (base: string, credential: Credential = {}): Effect.Effect<GuardrailClient> =>
  guardrailClient({
    baseUrl: base,
    token: credential.token,
    // Suites see each answer as sent (a 429 is not retried) and decisions as sent (no key: the fast lane's path).
    retry: false,
    idempotencyKeys: false,
    headers: {
      ...credential.headers,
      ...(credential.workspace === undefined ? {} : { "x-service-workspace-id": credential.workspace })
    }
  })

/**
 * Runs an API call that must fail with an HTTP error of `status` (and `code`,
 * when given); answers the error. A success, or any other failure, fails the test.
 */
export const expectFailure = <A, E>(call: Effect.Effect<A, E>, status: number, code?: string) =>
  Effect.gen(function* () {
    const exit = yield* Effect.exit(call)
    if (Exit.isSuccess(exit))
      return expect.fail(`expected HTTP ${status}, got a success: ${JSON.stringify(exit.value)}`)
    const failure = Cause.failureOption(exit.cause)
    if (Option.isNone(failure) || !isHttpError(failure.value)) {
      return expect.fail(`expected HTTP ${status}, got ${Cause.pretty(exit.cause)}`)
    }
    const error: HttpError = failure.value
    expect(statusOf(error), `${error.code}: ${error.message}`).toBe(status)
    if (code !== undefined) expect(error.code, error.message).toBe(code)
    return error
  })

/** Runs an API call that must fail with a 400 `validation_failed` naming `path`; answers the error. */
export const expectInvalid = <A, E>(call: Effect.Effect<A, E>, path: string) =>
  Effect.map(expectFailure(call, 400, "validation_failed"), (error) => {
    expect(
      error.details?.map((detail) => detail.path),
      error.message
    ).toContain(path)
    return error
  })

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
export const withRaw = <A, E, R>(call: Effect.Effect<readonly [A, HttpClientResponse.HttpClientResponse], E, R>) =>
  Effect.flatMap(call, ([value, response]) =>
    // The client decoded the body from its bytes (read once, kept): read them again.
    Effect.map(Effect.orDie(response.arrayBuffer), (bytes): WithRaw<A> => {
      const text = new TextDecoder().decode(bytes)
      return {
        value,
        status: response.status,
        headers: response.headers,
        text,
        body: text === "" ? undefined : (JSON.parse(text) as unknown)
      }
    })
  )

/** The sorted keys of a JSON object (fails the test for anything else). */
export const keysOf = (value: unknown) => {
  expect(typeof value === "object" && value !== null && !Array.isArray(value), JSON.stringify(value)).toBe(true)
  return Object.keys(value as object).sort()
}

/** The value at `path` inside a JSON value (object keys and array indexes), or undefined. */
export const jsonAt = (value: unknown, ...path: ReadonlyArray<string | number>): unknown => {
  let at: unknown = value
  for (const step of path) {
    if (typeof at !== "object" || at === null) return undefined
    at = Array.isArray(at) ? (typeof step === "number" ? at[step] : undefined) : (at as Record<string, unknown>)[step]
  }
  return at
}
