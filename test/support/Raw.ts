/**
 * The raw-request helper, for what the typed client cannot send: malformed
 * or oversized bodies, wrong media types, hostile headers and paths. Every
 * other test speaks through the typed client (Api.ts).
 */
import { expect } from "@effect/vitest"
import { Effect } from "effect"
import { connect } from "node:net"

export interface JsonResponse {
  readonly status: number
  readonly headers: Headers
  /** Parsed JSON when the answer is JSON, else the text. */
  readonly body: unknown
  readonly text: string
}

/** Sends a request and reads the whole answer. */
export const request = (url: string, init: RequestInit = {}) =>
  Effect.promise(async (): Promise<JsonResponse> => {
    const response = await fetch(url, init)
    const text = await response.text()
    const isJson = (response.headers.get("content-type") ?? "").includes("json") && text !== ""
    return {
      status: response.status,
      headers: response.headers,
      body: isJson ? (JSON.parse(text) as unknown) : text,
      text
    }
  })

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

export interface ErrorShape {
  readonly error: {
    readonly code: string
    readonly message: string
    readonly details?: ReadonlyArray<{ readonly path: string; readonly message: string }>
    readonly request_id?: string
  }
}

export const SNAKE_CASE = /^[a-z][a-z0-9]*(_[a-z0-9]+)*$/

/** True when `body` is the conventions' error body `{error: {code, message}}` with a snake_case code. */
export const isErrorBody = (body: unknown): body is ErrorShape => {
  if (typeof body !== "object" || body === null) return false
  const error = (body as { error?: unknown }).error
  if (typeof error !== "object" || error === null) return false
  const { code, message } = error as { code?: unknown; message?: unknown }
  return typeof code === "string" && SNAKE_CASE.test(code) && typeof message === "string" && message.length > 0
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

/** Sends `data` on a raw connection to `base` and answers what came back once the server closed it. */
export const untilServerCloses = (base: string, data: string) =>
  Effect.promise(
    () =>
      new Promise<string>((resolve) => {
        const socket = connect(Number(new URL(base).port), "127.0.0.1", () => socket.write(data))
        let received = ""
        socket.on("data", (chunk: Buffer) => (received += chunk.toString("latin1")))
        socket.on("error", () => {})
        socket.on("close", () => resolve(received))
      })
  )
