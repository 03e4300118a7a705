/**
 * Shared by the platform HTTP suites (platform-probes-openapi-http.test.ts,
 * platform-requests-http.test.ts, platform-fuzz-http.test.ts): the layers'
 * options, requests with a deadline, and the served OpenAPI document.
 */
import { expect } from "@effect/vitest"
import { Effect } from "effect"
import { request } from "../support/Raw.js"
import { baseUrl } from "../support/TestServer.js"

export const MiB = 1024 * 1024
export const SERVER_OPTIONS = { timeout: "120 seconds", excludeTestServices: true } as const

export const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

/**
 * `request` with a deadline: a server that never answers fails the test in
 * 15 s (instead of the 60 s test timeout) and the connection is dropped, so
 * the server can still shut down.
 */
export const answered = (url: string, init: RequestInit = {}) =>
  request(url, { ...init, signal: AbortSignal.timeout(15_000) })

export interface OpenApiDoc {
  readonly openapi: string
  readonly info: { readonly title: string; readonly version: string }
  readonly paths: Record<string, Record<string, { readonly responses?: Record<string, unknown> }>>
  readonly components?: { readonly schemas?: Record<string, unknown> }
}

export const fetchOpenApi = Effect.gen(function* () {
  const response = yield* answered(`${yield* baseUrl}/openapi.json`)
  expect(response.status).toBe(200)
  return response.body as OpenApiDoc
})
