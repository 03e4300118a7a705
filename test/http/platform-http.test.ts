/**
 * HTTP integration tests of the platform plumbing, against the real server
 * (real PostgreSQL through a fresh database, database or Kafka event log):
 * probes, the OpenAPI document against the spec, the docs UI, the error body
 * for unknown routes, stubs, malformed and oversized bodies, wrong content
 * types, request ids, a fuzzed batch of garbage requests (never a 500), and
 * the last-resort 500 of a throwaway API that dies.
 *
 * Every server is shared by the tests of its `layer(...)` block. The layers
 * are built with `excludeTestServices: true` so the server and the tests run
 * on the live clock (under the TestClock the server's timeouts and polling
 * loops would never advance).
 */
import { HttpApi, HttpApiBuilder, HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import fc from "fast-check"
import { readFileSync } from "node:fs"
import { createServer, request as httpRequest } from "node:http"
import * as Errors from "../../src/http/Errors.js"
import { requestPipeline } from "../../src/http/Pipeline.js"
import { makeRouteTable } from "../../src/http/Routes.js"
import { call, expectError, isErrorBody, request } from "../support/Raw.js"
import { signUp } from "../support/Tenants.js"
import { baseUrl, testServer } from "../support/TestServer.js"

const MiB = 1024 * 1024
const SERVER_OPTIONS = { timeout: "120 seconds", excludeTestServices: true } as const

// ---------------------------------------------------------------- helpers

const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

/**
 * `request` with a deadline: a server that never answers fails the test in
 * 15 s (instead of the 60 s test timeout) and the connection is dropped, so
 * the server can still shut down.
 */
const answered = (url: string, init: RequestInit = {}) => request(url, { ...init, signal: AbortSignal.timeout(15_000) })

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

/** OpenAPI paths with every parameter name erased: `/v1/runs/{id}` -> `/v1/runs/{}`. */
const eraseParams = (path: string) => path.replace(/\{[^}]*\}/g, "{}")

interface OpenApiDoc {
  readonly openapi: string
  readonly info: { readonly title: string; readonly version: string }
  readonly paths: Record<string, Record<string, { readonly responses?: Record<string, unknown> }>>
  readonly components?: { readonly schemas?: Record<string, unknown> }
}

const fetchOpenApi = Effect.gen(function* () {
  const response = yield* answered(`${yield* baseUrl}/openapi.json`)
  expect(response.status).toBe(200)
  return response.body as OpenApiDoc
})

/** Every "- `METHOD /v1/...`" line under "## Endpoints" of the spec, as [METHOD, path]. */
const specEndpoints = (): ReadonlyArray<readonly [string, string]> => {
  const markdown = readFileSync(new URL("../../../shared/spec/guardrail-api.md", import.meta.url), "utf8")
  const start = markdown.indexOf("\n## Endpoints")
  const end = markdown.indexOf("\n## ", start + 1)
  const section = markdown.slice(start, end === -1 ? undefined : end)
  return [...section.matchAll(/^- `(GET|POST|PUT|PATCH|DELETE) (\/v1\/[^`\s]*)`/gm)].map(
    (match) => [match[1]!, match[2]!] as const
  )
}

// ---------------------------------------------------------------- the real service, database event log

layer(testServer("database"), SERVER_OPTIONS)("platform HTTP (database event log)", (it) => {
  describe("probes", () => {
    it.effect("GET /healthz answers 200 {status: ok}", () =>
      Effect.gen(function* () {
        const response = yield* answered(`${yield* baseUrl}/healthz`)
        expect(response.status).toBe(200)
        expect(response.body).toMatchObject({ status: "ok" })
      })
    )

    it.effect("GET /readyz answers 200 with the database and the database event log checked", () =>
      Effect.gen(function* () {
        const response = yield* answered(`${yield* baseUrl}/readyz`)
        expect(response.status, response.text).toBe(200)
        expect(response.body).toEqual({ status: "ok", checks: { database: "ok", event_log: "database" } })
      })
    )
  })

  describe("OpenAPI document and docs", () => {
    it.effect("GET /openapi.json is an OpenAPI 3 document with every endpoint of the spec", () =>
      Effect.gen(function* () {
        const doc = yield* fetchOpenApi
        expect(doc.openapi).toMatch(/^3\./)
        expect(doc.info.title).toBeTruthy()
        expect(doc.info.version).toBeTruthy()

        const endpoints = specEndpoints()
        // The spec lists about ninety endpoints; a handful would mean the parser broke.
        expect(endpoints.length).toBeGreaterThan(80)

        const documented = new Set(
          Object.entries(doc.paths).flatMap(([path, operations]) =>
            Object.keys(operations).map((method) => `${method.toUpperCase()} ${eraseParams(path)}`)
          )
        )
        const missing = endpoints
          .map(([method, path]) => `${method} ${eraseParams(path)}`)
          .filter((endpoint) => !documented.has(endpoint))
        expect(missing).toEqual([])
      })
    )

    it.effect("the OpenAPI document declares the error body schema {error: {code, message}}", () =>
      Effect.gen(function* () {
        const doc = yield* fetchOpenApi
        const errorBody = doc.components?.schemas?.["ErrorBody"] as
          { properties?: { error?: { properties?: Record<string, unknown>; required?: Array<string> } } } | undefined
        expect(errorBody).toBeDefined()
        expect(Object.keys(errorBody?.properties?.error?.properties ?? {})).toEqual(
          expect.arrayContaining(["code", "message"])
        )
        // And the operations point at it for their failures.
        const runs = JSON.stringify(doc.paths["/v1/runs"]?.["post"]?.responses?.["400"])
        expect(runs).toContain("#/components/schemas/ErrorBody")
      })
    )

    it.effect("every documented error response describes only the error body the server sends", () =>
      Effect.gen(function* () {
        // A client generated from the document must not expect any other error
        // shape: the server answers every 4xx/5xx with {error: {code, message}}.
        const doc = yield* fetchOpenApi
        const offenders: Array<string> = []
        for (const [path, operations] of Object.entries(doc.paths)) {
          for (const [method, operation] of Object.entries(operations)) {
            for (const [status, response] of Object.entries(operation.responses ?? {})) {
              if (Number(status) < 400) continue
              const refs = [...JSON.stringify(response).matchAll(/#\/components\/schemas\/([A-Za-z0-9_]+)/g)].map(
                (match) => match[1]
              )
              const foreign = refs.filter((ref) => ref !== "ErrorBody")
              if (foreign.length > 0) offenders.push(`${method.toUpperCase()} ${path} ${status}: ${foreign.join(",")}`)
            }
          }
        }
        expect(offenders.slice(0, 5), `${offenders.length} error responses reference other schemas`).toEqual([])
      })
    )

    it.effect("GET /docs answers 200 text/html", () =>
      Effect.gen(function* () {
        const response = yield* answered(`${yield* baseUrl}/docs`)
        expect(response.status).toBe(200)
        expect(response.headers.get("content-type")).toMatch(/^text\/html/)
        expect(response.text.toLowerCase()).toContain("<html")
      })
    )
  })

  describe("routing", () => {
    it.effect("an unknown route answers 404 route_not_found", () =>
      Effect.gen(function* () {
        const response = yield* answered(`${yield* baseUrl}/v1/nope`)
        const error = expectError(response, 404, "route_not_found")
        expect(error.message).toContain("/v1/nope")
      })
    )

    it.effect("a wrong method on a known path answers 404 route_not_found", () =>
      Effect.gen(function* () {
        const response = yield* answered(`${yield* baseUrl}/v1/runs`, { method: "DELETE" })
        expectError(response, 404, "route_not_found")
      })
    )
  })

  describe("bad input is a 400", () => {
    it.effect("malformed JSON answers 400 malformed_json", () =>
      Effect.gen(function* () {
        const response = yield* answered(`${yield* baseUrl}/v1/runs`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: "{bad"
        })
        expectError(response, 400, "malformed_json")
      })
    )

    it.effect("an empty JSON body answers 400 validation_failed", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const { jwt } = yield* signUp(base)
        const response = yield* call(base, "POST", "/v1/runs", { token: jwt, raw: "" })
        expectError(response, 400, "validation_failed")
      })
    )

    it.effect("a schema violation answers 400 validation_failed naming the field", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const { jwt } = yield* signUp(base)
        const response = yield* call(base, "POST", "/v1/runs", { token: jwt, body: { agent_id: "a", kind: "nope" } })
        const error = expectError(response, 400, "validation_failed")
        expect(error.details?.map((detail) => detail.path)).toContain("kind")
        expect(error.message).toContain("kind")
      })
    )

    it.effect("a bad query parameter answers 400 validation_failed", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const { jwt } = yield* signUp(base)
        for (const limit of ["-1", "abc", "1.5"]) {
          const response = yield* call(base, "GET", `/v1/runs?limit=${limit}`, { token: jwt })
          const error = expectError(response, 400, "validation_failed")
          expect(error.details?.map((detail) => detail.path)).toContain("limit")
        }
      })
    )
  })

  describe("content types", () => {
    it.effect("a JSON endpoint refuses text/plain with 415 unsupported_media_type", () =>
      Effect.gen(function* () {
        const response = yield* answered(`${yield* baseUrl}/v1/runs`, {
          method: "POST",
          headers: { "content-type": "text/plain" },
          body: JSON.stringify({ agent_id: "a", kind: "chat_session" })
        })
        expectError(response, 415, "unsupported_media_type")
      })
    )

    // The spec gives POST /v1/policies the request media type application/yaml; the conventions
    // accept JSON text there too. What matters here is that the body gets through the pipeline
    // to the handler (unauthenticated, so 401), promptly.
    it.effect("a YAML endpoint accepts application/yaml (reaches the handler, not 415/500)", () =>
      Effect.gen(function* () {
        const response = yield* answered(`${yield* baseUrl}/v1/policies`, {
          method: "POST",
          headers: { "content-type": "application/yaml" },
          body: "id: no-refund-promise\ndescription: Never promise a refund\nfamily: content\n"
        })
        expect(response.status, response.text).not.toBe(415)
        expect(response.status, response.text).toBeLessThan(500)
      })
    )

    it.effect("a YAML endpoint accepts a JSON document sent as application/json (not 415/500)", () =>
      Effect.gen(function* () {
        const response = yield* call(yield* baseUrl, "POST", "/v1/policies", {
          body: { id: "no-refund-promise", description: "Never promise a refund" }
        })
        expect(response.status, response.text).not.toBe(415)
        expect(response.status, response.text).toBeLessThan(500)
      })
    )

    // The pipeline accepts any "+json" media type for JSON endpoints (isJsonType).
    it.effect("a JSON endpoint answers a +json content type it accepts (application/vnd.api+json), no hang", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const { jwt } = yield* signUp(base)
        const response = yield* call(base, "POST", "/v1/runs", {
          token: jwt,
          body: { agent_id: "a", kind: "chat_session" },
          contentType: "application/vnd.api+json"
        })
        // The body is decoded as JSON and the run is created.
        expect(response.status, response.text).toBe(201)
      })
    )

    it.effect("a YAML endpoint refuses text/plain with 415 unsupported_media_type", () =>
      Effect.gen(function* () {
        const response = yield* answered(`${yield* baseUrl}/v1/policies`, {
          method: "POST",
          headers: { "content-type": "text/plain" },
          body: "id: x\n"
        })
        expectError(response, 415, "unsupported_media_type")
      })
    )
  })

  describe("body size limit (1 MiB)", () => {
    it.effect("a body over the limit with content-length answers 413 payload_too_large", () =>
      Effect.gen(function* () {
        const response = yield* answered(`${yield* baseUrl}/v1/runs`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify("x".repeat(2 * MiB))
        })
        expectError(response, 413, "payload_too_large")
      })
    )

    it.effect("a chunked body over the limit (no content-length) answers 413 payload_too_large", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        // Without content-length the limit can only be enforced while reading; the client must
        // still receive the 413, not a reset connection.
        // 2 MiB of a JSON string, streamed in 64 KiB chunks, so fetch sends transfer-encoding: chunked.
        const chunk = new TextEncoder().encode("x".repeat(64 * 1024))
        let sent = 0
        const stream = new ReadableStream<Uint8Array>({
          pull(controller) {
            if (sent === 0) controller.enqueue(new TextEncoder().encode('"'))
            if (sent >= 2 * MiB) {
              controller.enqueue(new TextEncoder().encode('"'))
              controller.close()
              return
            }
            sent += chunk.length
            controller.enqueue(chunk)
          }
        })
        const response = yield* answered(`${base}/v1/runs`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: stream,
          duplex: "half"
        } as RequestInit)
        expectError(response, 413, "payload_too_large")
      })
    )

    it.effect("a body just under the limit is read (not 413)", () =>
      Effect.gen(function* () {
        const response = yield* call(yield* baseUrl, "POST", "/v1/runs", {
          body: { agent_id: "a", kind: "chat_session", metadata: "x".repeat(MiB - 1024) }
        })
        expect(response.status, response.text).not.toBe(413)
        expect(response.status, response.text).toBeLessThan(500)
      })
    )
  })

  describe("x-request-id", () => {
    it.effect("every response carries a sane x-request-id, successes and errors alike", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const responses = [
          yield* answered(`${base}/healthz`),
          yield* answered(`${base}/openapi.json`),
          yield* answered(`${base}/docs`),
          yield* answered(`${base}/v1/nope`),
          yield* answered(`${base}/v1/runs`),
          yield* answered(`${base}/v1/runs?limit=-1`),
          yield* answered(`${base}/v1/runs`, { method: "POST", headers: { "content-type": "text/plain" }, body: "x" })
        ]
        const ids = responses.map((response) => response.headers.get("x-request-id"))
        for (const id of ids) expect(id).toMatch(SANE_REQUEST_ID)
        // Generated ids are unique per request.
        expect(new Set(ids).size).toBe(ids.length)
      })
    )

    it.effect("a sane incoming x-request-id is echoed back", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const id = "client-req.42:abc_DEF"
        const ok = yield* answered(`${base}/healthz`, { headers: { "x-request-id": id } })
        expect(ok.headers.get("x-request-id")).toBe(id)
        const failed = yield* answered(`${base}/v1/nope`, { headers: { "x-request-id": id } })
        expect(failed.headers.get("x-request-id")).toBe(id)
      })
    )

    it.effect("an insane incoming x-request-id is replaced by a generated one", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        for (const id of ["x".repeat(300), "has spaces in it", "<script>", "a/b"]) {
          const response = yield* answered(`${base}/healthz`, { headers: { "x-request-id": id } })
          const echoed = response.headers.get("x-request-id")
          expect(echoed).not.toBe(id)
          expect(echoed).toMatch(SANE_REQUEST_ID)
        }
      })
    )
  })

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

// ---------------------------------------------------------------- the real service, Kafka event log

layer(testServer("kafka"), SERVER_OPTIONS)("platform HTTP (Kafka event log)", (it) => {
  it.effect("GET /readyz answers 200 with the database and the Kafka event log checked", () =>
    Effect.gen(function* () {
      const response = yield* answered(`${yield* baseUrl}/readyz`)
      expect(response.status, response.text).toBe(200)
      expect(response.body).toEqual({ status: "ok", checks: { database: "ok", event_log: "kafka" } })
    })
  )
})

// ---------------------------------------------------------------- the last-resort 500

/** A throwaway API whose one endpoint dies, served with the same request pipeline as src/Server.ts. */
class BoomGroup extends HttpApiGroup.make("boom").add(HttpApiEndpoint.get("boom", "/boom").addSuccess(Schema.String)) {}

class BoomApi extends HttpApi.make("boom-test").add(BoomGroup).addError(Errors.AnyHttpErrorWire) {}

const BoomGroupLive = HttpApiBuilder.group(BoomApi, "boom", (handlers) =>
  handlers.handle("boom", () => Effect.die(new Error("boom")))
)

const boomServer = HttpApiBuilder.serve().pipe(
  Layer.provide(HttpApiBuilder.middleware(BoomApi, requestPipeline(makeRouteTable(BoomApi), MiB))),
  Layer.provide(HttpApiBuilder.api(BoomApi).pipe(Layer.provide(BoomGroupLive))),
  Layer.provideMerge(NodeHttpServer.layer(createServer, { port: 0, host: "127.0.0.1" }))
)

layer(boomServer, SERVER_OPTIONS)("the last-resort 500", (it) => {
  it.effect("a defect answers 500 internal_error with the request id and no stack trace", () =>
    Effect.gen(function* () {
      const response = yield* answered(`${yield* baseUrl}/boom`)

      const error = expectError(response, 500, "internal_error")
      const headerId = response.headers.get("x-request-id")
      expect(headerId).toMatch(SANE_REQUEST_ID)
      expect(error.request_id).toBe(headerId)
      expect(error.message).toContain(headerId!)
      // Nothing of the defect leaks out.
      expect(response.text).not.toContain("boom")
      expect(response.text).not.toMatch(/\bat \S+/)
      expect(response.text).not.toContain("Error:")
    })
  )

  it.effect("the 500 quotes the client's own request id when it sent a sane one", () =>
    Effect.gen(function* () {
      const response = yield* answered(`${yield* baseUrl}/boom`, { headers: { "x-request-id": "trace-me-123" } })
      const error = expectError(response, 500, "internal_error")
      expect(response.headers.get("x-request-id")).toBe("trace-me-123")
      expect(error.request_id).toBe("trace-me-123")
      expect(error.message).toContain("trace-me-123")
    })
  )
})
