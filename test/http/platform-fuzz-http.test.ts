/**
 * HTTP integration tests of the platform plumbing, against the real server
 * (real PostgreSQL through a fresh database, database event log): bad input
 * never answers a 500, and a fuzzed batch of garbage requests (junk path
 * parameters, queries, content types and bodies on every documented path)
 * never answers 5xx and always carries the error body. The rest of the
 * plumbing is in platform-probes-openapi-http.test.ts and
 * platform-requests-http.test.ts.
 *
 * Every server is shared by the tests of its `layer(...)` block. The layers
 * are built with `excludeTestServices: true` so the server and the tests run
 * on the live clock (under the TestClock the server's timeouts and polling
 * loops would never advance).
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import fc from "fast-check"
import { request as httpRequest } from "node:http"
import { isErrorBody } from "../support/Raw.js"
import { baseUrl, testServer } from "../support/TestServer.js"
import { answered, fetchOpenApi, SERVER_OPTIONS } from "./platform-http-support.js"

// ---------------------------------------------------------------- helpers

interface RawResponse {
  readonly status: number
  readonly headers: Record<string, string | Array<string> | undefined>
  readonly text: string
}

/**
 * One request over node:http, with the path sent exactly as given (fetch
 * would normalize `../` and refuses bodies on GET). Fails after 15 s: a hang
 * is as much a bug as a 500.
 */
const rawRequest = (
  base: string,
  options: {
    readonly method: string
    readonly path: string
    readonly headers?: Record<string, string>
    readonly body?: string | Buffer | undefined
  }
) =>
  Effect.async<RawResponse, Error>((resume) => {
    const url = new URL(base)
    // node:http frames bodies of GET/DELETE only with an explicit content-length.
    const length = options.body === undefined ? {} : { "content-length": String(Buffer.byteLength(options.body)) }
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        method: options.method,
        path: options.path,
        headers: { ...options.headers, ...length },
        timeout: 15_000,
        agent: false
      },
      (res) => {
        const chunks: Array<Buffer> = []
        res.on("data", (chunk: Buffer) => chunks.push(chunk))
        res.on("end", () =>
          resume(
            Effect.succeed({
              status: res.statusCode ?? 0,
              headers: res.headers,
              text: Buffer.concat(chunks).toString()
            })
          )
        )
        res.on("error", (error) => resume(Effect.fail(error)))
      }
    )
    req.on("timeout", () => req.destroy(new Error("no answer within 15 s")))
    req.on("error", (error) => resume(Effect.fail(error)))
    if (options.body !== undefined) req.write(options.body)
    req.end()
  })

const parseJson = (text: string): unknown => {
  try {
    return JSON.parse(text) as unknown
  } catch {
    return undefined
  }
}

// ---------------------------------------------------------------- fuzzing arbitraries

/** Path parameter values a hostile or careless client might send, already in wire form. */
const junkSegment = fc.oneof(
  fc.constantFrom(
    "%00",
    "..%2F..%2Fetc%2Fpasswd",
    "..",
    "%2e%2e",
    "%ZZ",
    "%",
    "%E0%A4%A",
    "%C0%AF",
    "%F0%9F%92%A9",
    "%FF%FE",
    "%20",
    "null",
    "undefined",
    "-1",
    "1e999",
    "__proto__",
    "constructor",
    encodeURIComponent("' or 1=1 --"),
    "a".repeat(5000),
    encodeURIComponent("ünïcødé ☃ 𝕏")
  ),
  fc.string({ unit: "grapheme", maxLength: 40 }).map(encodeURIComponent),
  // Arbitrary bytes, percent-encoded: invalid UTF-8, NULs, slashes, dots.
  fc
    .uint8Array({ maxLength: 20 })
    .map((bytes) => Array.from(bytes, (byte) => `%${byte.toString(16).padStart(2, "0").toUpperCase()}`).join(""))
)

const junkQuery = fc.constantFrom(
  "",
  "",
  "?limit=-1",
  "?limit=abc",
  "?limit=1e400",
  "?limit=99999999999999999999999",
  "?limit=",
  "?limit=1&limit=2",
  "?cursor=%FF%FE",
  "?cursor=%ZZ",
  "?kind=nope&status=nope",
  "?start=not-a-date&end=%00",
  "?group_by=%00",
  "?__proto__[x]=1",
  "?a[b][c]=1",
  "?=&&=",
  "?" + "q=".repeat(2000)
)

const junkContentType = fc.constantFrom(
  undefined,
  "application/json",
  "application/json; charset=utf-16",
  "application/vnd.api+json",
  "application/yaml",
  "text/yaml",
  "text/plain",
  "text/html",
  "multipart/form-data",
  "multipart/form-data; boundary=zzz",
  "application/x-www-form-urlencoded",
  "application/octet-stream",
  "garbage",
  ";;;"
)

const deepArray = (depth: number) => "[".repeat(depth) + "]".repeat(depth)
const deepObject = (depth: number) => '{"a":'.repeat(depth) + "1" + "}".repeat(depth)

const junkBody = fc.oneof(
  fc.constant(undefined),
  fc.constantFrom(
    "{bad",
    "[",
    '{"a":}',
    "\u0000",
    "nul",
    "{'a':1}",
    '"unterminated',
    "",
    " ",
    "\ufeff{}",
    "---\n:\n- ["
  ),
  fc.jsonValue().map((value) => JSON.stringify(value)),
  fc.integer({ min: 1_000, max: 100_000 }).map(deepArray),
  fc.integer({ min: 1_000, max: 100_000 }).map(deepObject),
  fc.constantFrom(
    "1e999999",
    "-1e400",
    "123456789012345678901234567890",
    '{"limit":1e309}',
    '{"agent_id":"a","kind":"chat_session","metadata":1e999}',
    '{"agent_id":"a","kind":"chat_session","metadata":' + deepArray(50_000) + "}",
    '{"__proto__":{"polluted":true}}',
    '"\\ud800"'
  ),
  fc.array(fc.jsonValue(), { maxLength: 50 }).map((value) => JSON.stringify(value)),
  fc
    .dictionary(
      fc.constantFrom("agent_id", "kind", "name", "ids", "enabled", "metric", "outcome", "prompt", "profile", "config"),
      fc.jsonValue()
    )
    .map((value) => JSON.stringify(value)),
  fc.string({ unit: "binary", maxLength: 200 })
)

/** A request with a random method, a documented path with junk parameters, random headers and body. */
const garbageRequest = (paths: ReadonlyArray<string>) =>
  fc
    .record({
      method: fc.constantFrom("GET", "POST", "PUT", "PATCH", "DELETE"),
      path: fc.oneof(
        { weight: 5, arbitrary: fc.constantFrom(...paths) },
        { weight: 1, arbitrary: fc.constantFrom("/", "/v1", "/v1/", "//v1//runs", "/v1/runs/", "/%", "/v1/%ZZ/x") }
      ),
      segments: fc.array(junkSegment, { minLength: 3, maxLength: 3 }),
      query: junkQuery,
      contentType: junkContentType,
      body: junkBody,
      requestId: fc.option(fc.constantFrom("ok-id", "x".repeat(500), "bad id", "%00"), { nil: undefined })
    })
    .map(({ method, path, segments, query, contentType, body, requestId }) => {
      let index = 0
      const filled = path.replace(/\{[^}]*\}/g, () => segments[index++ % segments.length]!)
      const headers: Record<string, string> = {}
      if (contentType !== undefined) headers["content-type"] = contentType
      if (requestId !== undefined) headers["x-request-id"] = requestId
      return { method, path: filled + query, headers, body }
    })

// ---------------------------------------------------------------- the real service, database event log

layer(testServer("database"), SERVER_OPTIONS)("platform HTTP (database event log)", (it) => {
  describe("no 500 from bad input", () => {
    it.effect("a POST without a body but with Content-Type multipart/form-data answers 4xx, not 500", () =>
      Effect.gen(function* () {
        const response = yield* answered(`${yield* baseUrl}/v1/runs`, {
          method: "POST",
          headers: { "content-type": "multipart/form-data" }
        })
        expect(response.status, response.text).toBeGreaterThanOrEqual(400)
        expect(response.status, response.text).toBeLessThan(500)
        expect(isErrorBody(response.body), response.text).toBe(true)
      })
    )

    it.effect(
      "300 fuzzed garbage requests never answer 5xx and always carry the error body",
      () =>
        Effect.gen(function* () {
          const base = yield* baseUrl
          const doc = yield* fetchOpenApi
          const requests = fc.sample(garbageRequest(Object.keys(doc.paths)), { seed: 20_261_122, numRuns: 300 })
          const results = yield* Effect.forEach(
            requests,
            (garbage) =>
              rawRequest(base, garbage).pipe(
                Effect.map((response) => ({ garbage, response })),
                Effect.catchAll((error) => Effect.succeed({ garbage, response: error }))
              ),
            { concurrency: 8 }
          )
          const offenders = results.flatMap(({ garbage, response }) => {
            const label = `${garbage.method} ${garbage.path.slice(0, 120)} [${garbage.headers["content-type"] ?? "-"}] body=${String(garbage.body ?? "").slice(0, 60)}`
            if (response instanceof Error) return [`${label} -> no answer: ${response.message}`]
            const { status, text } = response
            if (status >= 500) return [`${label} -> ${status} ${text.slice(0, 200)}`]
            if (status >= 400 && !isErrorBody(parseJson(text))) {
              return [`${label} -> ${status} without the error body: ${text.slice(0, 200)}`]
            }
            return []
          })
          expect(offenders).toEqual([])
        }),
      180_000
    )
  })
})
