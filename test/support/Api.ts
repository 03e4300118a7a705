/**
 * The contract's typed client (src/client/Client.ts) for tests, and the
 * check of an error answer. HTTP suites call the API through it; requests
 * the contract cannot express (malformed bodies, wrong media types, hostile
 * headers) go through `call` in Raw.ts.
 */
import { expect } from "@effect/vitest"
import { Cause, Effect, Exit, Option } from "effect"
import { type GuardrailClient, guardrailClient } from "../../src/client/Client.js"
import { type HttpError, isHttpError, statusOf } from "../../src/http/Errors.js"

export type { GuardrailClient } from "../../src/client/Client.js"

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
