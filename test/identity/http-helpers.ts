/**
 * Helpers of the identity HTTP suites: the suites' server options, timestamp
 * and id patterns, a typed-client call together with the raw answer it
 * decoded (`withRaw`), requests from a chosen loopback address (`postFrom`),
 * and direct reads of the database behind a `testServerWithDatabase` server.
 *
 * The other exports are the former request helpers, kept for the suites that
 * still import them from here: they are now thin adapters over
 * test/support/{Api,Tenants,Raw}.ts, which new code imports instead.
 */
import type { HttpClientResponse } from "@effect/platform"
import { expect } from "@effect/vitest"
import { Cause, Effect, Exit, Option } from "effect"
import { request as httpRequest } from "node:http"
import pg from "pg"
import { type HttpError, isHttpError, statusOf } from "../../src/http/Errors.js"
import { clientAt } from "../support/Api.js"
import type { JsonResponse } from "../support/Raw.js"
import * as Tenants from "../support/Tenants.js"
import { uniqueName } from "../support/TestPlatform.js"

export const SERVER_OPTIONS = { timeout: "180 seconds", excludeTestServices: true } as const

/** RFC 3339 in UTC with milliseconds. */
export const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

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

// ---------------------------------------------------------------- the database

/** Runs one query against the database at `url`; answers the rows. */
export const queryDatabase = <Row = Record<string, unknown>>(
  url: string,
  text: string,
  values: ReadonlyArray<unknown> = []
) =>
  Effect.promise(async () => {
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    try {
      return (await client.query(text, [...values])).rows as Array<Row>
    } finally {
      await client.end()
    }
  })

// ---------------------------------------------------------------- former helpers (use test/support instead)

/** @deprecated Import from test/support/Tenants.ts. */
export const INTERNAL_KEY = Tenants.INTERNAL_KEY
/** @deprecated Import from test/support/Tenants.ts. */
export const sha256Hex = Tenants.sha256Hex

export {
  /** @deprecated Import from test/support/Raw.ts. */
  call,
  /** @deprecated Import from test/support/Raw.ts. */
  type CallOptions,
  /** @deprecated Import from test/support/Raw.ts. */
  type ErrorShape,
  /** @deprecated Import from test/support/Raw.ts. */
  expectError,
  /** @deprecated Import from test/support/Raw.ts. */
  expectValidation,
  /** @deprecated Import from test/support/Raw.ts. */
  isErrorBody,
  /** @deprecated Import from test/support/Raw.ts. */
  SNAKE_CASE
} from "../support/Raw.js"

/**
 * Asserts the response is `status`; answers its body, unchecked.
 * @deprecated Call the API through the typed client (test/support/Api.ts), whose answers are typed.
 */
export const expectStatus = (response: JsonResponse, status: number): unknown => {
  expect(response.status, response.text).toBe(status)
  return response.body
}

/** @deprecated Use `User` of test/support/Tenants.ts (it carries the user's client). */
export interface User {
  readonly jwt: string
  readonly user_id: string
  readonly username: string
  /** The password digest the user signed up with. */
  readonly password: string
}

/** @deprecated Use `Tenant` of test/support/Tenants.ts (it carries the user's client). */
export interface Tenant extends User {
  readonly workspaceId: string
  readonly organizationId: string
  readonly defaultEnvironmentId: string
}

const userOf = ({ jwt, password, user_id, username }: Tenants.User): User => ({ jwt, user_id, username, password })

/**
 * Signs up a fresh user (with its personal workspace) and answers its session.
 * @deprecated Use `signUp` of test/support/Tenants.ts.
 */
export const signUp = (base: string, username = uniqueName("user")) =>
  Effect.map(Tenants.signUp(base, username), userOf)

/**
 * A signed-up user with the ids of its personal workspace and default environment.
 * @deprecated Use `tenant` of test/support/Tenants.ts.
 */
export const tenant = (base: string, username = uniqueName("tenant")) =>
  Effect.map(Tenants.tenant(base, username), (signedUp): Tenant => ({
    ...userOf(signedUp),
    workspaceId: signedUp.workspaceId,
    organizationId: signedUp.organizationId,
    defaultEnvironmentId: signedUp.defaultEnvironmentId
  }))

/** The client of a session (or key) `owner.jwt` at `base`. */
const clientOf = (base: string, owner: { readonly jwt: string }) =>
  Effect.map(clientAt(base, { token: owner.jwt }), (api) => ({ api }))

/**
 * A runtime key created by `owner` (optionally bound to `environment_id`); answers the create response.
 * @deprecated Use `createKey` of test/support/Tenants.ts.
 */
export const createKey = (
  base: string,
  owner: { readonly jwt: string },
  body: { readonly name?: string; readonly environment_id?: string } = {}
) => Effect.flatMap(clientOf(base, owner), (client) => Tenants.createKey(client, body))

/**
 * A user of `role` in `owner`'s workspace: invited by the owner, the invite accepted through the trusted web
 * client (the server needs INTERNAL_API_KEY = INTERNAL_KEY). Acts there with `workspace: owner.workspaceId`.
 * @deprecated Use `joinedAs` of test/support/Tenants.ts.
 */
export const joinedAs = (base: string, owner: Tenant, role: "admin" | "member") =>
  Effect.gen(function* () {
    const { api } = yield* clientOf(base, owner)
    return userOf(yield* Tenants.joinedAs(base, { ...owner, api }, role))
  })

/**
 * A new environment in the caller's (default or given) workspace.
 * @deprecated Use `createEnvironment` of test/support/Tenants.ts.
 */
export const createEnvironment = (
  base: string,
  owner: { readonly jwt: string },
  slug = uniqueName("env").replaceAll("_", "-")
) => Effect.flatMap(clientOf(base, owner), (client) => Tenants.createEnvironment(client, slug))

/**
 * A session for an OAuth identity, through the internal endpoint.
 * @deprecated Use `oauthSession` of test/support/Tenants.ts.
 */
export const oauthSession = Tenants.oauthSession
