/**
 * Helpers of the identity HTTP suites: requests with a deadline, the error
 * body check, users signed up over the API, and direct reads of the
 * database behind a `testServerWithDatabase` server.
 */
import { expect } from "@effect/vitest"
import { Effect } from "effect"
import { createHash } from "node:crypto"
import { request as httpRequest } from "node:http"
import pg from "pg"
import { uniqueName } from "../support/TestPlatform.js"
import { type JsonResponse, request } from "../support/TestServer.js"

export const SERVER_OPTIONS = { timeout: "180 seconds", excludeTestServices: true } as const

export const INTERNAL_KEY = "internal-test-key-0123456789abcdef0123456789abcdef"

export interface ErrorShape {
  readonly error: {
    readonly code: string
    readonly message: string
    readonly details?: ReadonlyArray<{ readonly path: string; readonly message: string }>
  }
}

export const SNAKE_CASE = /^[a-z][a-z0-9]*(_[a-z0-9]+)*$/
/** RFC 3339 in UTC with milliseconds. */
export const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/** True when `body` is the conventions' error body `{error: {code, message}}` with a snake_case code. */
export const isErrorBody = (body: unknown): body is ErrorShape => {
  if (typeof body !== "object" || body === null) return false
  const error = (body as { error?: unknown }).error
  if (typeof error !== "object" || error === null) return false
  const { code, message } = error as { code?: unknown; message?: unknown }
  return typeof code === "string" && SNAKE_CASE.test(code) && typeof message === "string" && message.length > 0
}

export const sha256Hex = (plaintext: string) => createHash("sha256").update(plaintext).digest("hex")

export interface CallOptions {
  readonly token?: string | undefined
  /** Serialized as JSON with `content-type: application/json` unless `raw` is given. */
  readonly body?: unknown
  /** A body sent as is, with `contentType` (default `application/json`). */
  readonly raw?: string | undefined
  readonly contentType?: string | undefined
  readonly headers?: Record<string, string> | undefined
  readonly workspace?: string | undefined
}

/**
 * One request to `base + path` with a 15 s deadline (a hang fails fast and
 * the connection is dropped so the server can still shut down).
 */
export const call = (base: string, method: string, path: string, options: CallOptions = {}) => {
  const headers: Record<string, string> = { ...options.headers }
  if (options.token !== undefined) headers["authorization"] = `Bearer ${options.token}`
  if (options.workspace !== undefined) headers["x-service-workspace-id"] = options.workspace
  let body: string | undefined
  if (options.raw !== undefined) {
    body = options.raw
    headers["content-type"] = options.contentType ?? "application/json"
  } else if (options.body !== undefined) {
    body = JSON.stringify(options.body)
    headers["content-type"] = options.contentType ?? "application/json"
  }
  return request(`${base}${path}`, {
    method,
    headers,
    ...(body === undefined ? {} : { body }),
    signal: AbortSignal.timeout(15_000)
  })
}

/** Asserts the response is `status` with the error body carrying `code`; answers the error. */
export const expectError = (response: JsonResponse, status: number, code?: string) => {
  expect(response.status, response.text).toBe(status)
  expect(isErrorBody(response.body), response.text).toBe(true)
  const { error } = response.body as ErrorShape
  if (code !== undefined) expect(error.code, response.text).toBe(code)
  return error
}

/** Asserts a 400 `validation_failed` whose details name `path`. */
export const expectValidation = (response: JsonResponse, path: string) => {
  const error = expectError(response, 400, "validation_failed")
  expect(
    error.details?.map((detail) => detail.path),
    response.text
  ).toContain(path)
  return error
}

export const expectStatus = (response: JsonResponse, status: number) => {
  expect(response.status, response.text).toBe(status)
  return response.body as any
}

export interface User {
  readonly jwt: string
  readonly user_id: string
  readonly username: string
  /** The password digest the user signed up with. */
  readonly password: string
}

/** Signs up a fresh user (with its personal workspace) and answers its session. */
export const signUp = (base: string, username = uniqueName("user")) =>
  Effect.gen(function* () {
    const password = sha256Hex(`${username} secret`)
    const response = yield* call(base, "POST", "/v1/auth/signup", { body: { username, password } })
    expect(response.status, response.text).toBe(200)
    const session = response.body as { jwt: string; user_id: string; username: string }
    return { ...session, password } satisfies User
  })

export interface Tenant extends User {
  readonly workspaceId: string
  readonly organizationId: string
  readonly defaultEnvironmentId: string
}

/** A signed-up user with the ids of its personal workspace and default environment. */
export const tenant = (base: string, username = uniqueName("tenant")) =>
  Effect.gen(function* () {
    const user = yield* signUp(base, username)
    const mine = yield* call(base, "GET", "/v1/team/my-workspaces", {
      token: user.jwt,
      headers: { "x-service-user-id": user.user_id }
    })
    const { workspaces } = expectStatus(mine, 200) as { workspaces: Array<{ id: string; organization_id: string }> }
    expect(workspaces).toHaveLength(1)
    const environments = expectStatus(yield* call(base, "GET", "/v1/environments", { token: user.jwt }), 200) as {
      environments: Array<{ id: string; is_default: boolean }>
    }
    const defaultEnvironment = environments.environments.find((environment) => environment.is_default)
    expect(defaultEnvironment).toBeDefined()
    return {
      ...user,
      workspaceId: workspaces[0]!.id,
      organizationId: workspaces[0]!.organization_id,
      defaultEnvironmentId: defaultEnvironment!.id
    } satisfies Tenant
  })

/** A runtime key created by `owner` (optionally bound to `environment_id`); answers the create response. */
export const createKey = (base: string, owner: { jwt: string }, body: Record<string, unknown> = {}) =>
  Effect.gen(function* () {
    const response = yield* call(base, "POST", "/v1/api-keys", {
      token: owner.jwt,
      body: { name: uniqueName("key"), ...body }
    })
    return expectStatus(response, 201) as {
      api_key: { id: string; prefix: string; environment_id: string; environment: string; status: string }
      plaintext_key: string
    }
  })

/**
 * A user of `role` in `owner`'s workspace: invited by the owner, the invite accepted through the trusted web
 * client (the server needs INTERNAL_API_KEY = INTERNAL_KEY). Acts there with `workspace: owner.workspaceId`.
 */
export const joinedAs = (base: string, owner: Tenant, role: "admin" | "member") =>
  Effect.gen(function* () {
    const user = yield* signUp(base)
    const email = `${uniqueName(role)}@example.com`
    expectStatus(yield* call(base, "POST", "/v1/team/invites", { token: owner.jwt, body: { email, role } }), 201)
    const mine = expectStatus(
      yield* call(base, "GET", "/v1/team/my-workspaces", {
        token: INTERNAL_KEY,
        headers: { "x-service-user-id": user.user_id, "x-service-user-email": email }
      }),
      200
    ) as { workspaces: ReadonlyArray<{ readonly id: string; readonly role: string }> }
    expect(mine.workspaces.find((w) => w.id === owner.workspaceId)?.role).toBe(role)
    return user
  })
/** A new environment in the caller's (default or given) workspace. */
export const createEnvironment = (
  base: string,
  owner: { jwt: string },
  slug = uniqueName("env").replaceAll("_", "-")
) =>
  Effect.gen(function* () {
    const response = yield* call(base, "POST", "/v1/environments", { token: owner.jwt, body: { name: slug, slug } })
    return expectStatus(response, 201) as { id: string; slug: string; name: string; is_default: boolean }
  })

/** A session for an OAuth identity, through the internal endpoint. */
export const oauthSession = (base: string, input: { email: string; provider: string; provider_subject: string }) =>
  Effect.gen(function* () {
    const response = yield* call(base, "POST", "/v1/identity/oauth-session", { token: INTERNAL_KEY, body: input })
    return expectStatus(response, 200) as { jwt: string; user_id: string; username: string }
  })

export interface RawResponse {
  readonly status: number
  readonly headers: Record<string, string | Array<string> | undefined>
  readonly text: string
  readonly body: unknown
}

/**
 * A JSON POST over node:http from the given local (loopback) address, so a
 * test can be several client addresses at once. Fails after 15 s.
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
