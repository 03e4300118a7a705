/**
 * HTTP integration tests of the platform plumbing, against the real server
 * (real PostgreSQL through a fresh database, database or Kafka event log):
 * probes, the OpenAPI document against the spec, the docs UI, the error body
 * for unknown routes, and the last-resort 500 of a throwaway API that dies.
 * Bad input, content types, body size and request ids are in
 * platform-requests-http.test.ts; the fuzzed batch of garbage requests in
 * platform-fuzz-http.test.ts.
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
import { readFileSync } from "node:fs"
import { createServer } from "node:http"
import * as Errors from "../../src/http/Errors.js"
import { requestPipeline } from "../../src/http/Pipeline.js"
import { makeRouteTable } from "../../src/http/Routes.js"
import { expectError } from "../support/Raw.js"
import { baseUrl, testServer } from "../support/TestServer.js"
import { answered, fetchOpenApi, MiB, SANE_REQUEST_ID, SERVER_OPTIONS } from "./platform-http-support.js"

/** OpenAPI paths with every parameter name erased: `/v1/runs/{id}` -> `/v1/runs/{}`. */
const eraseParams = (path: string) => path.replace(/\{[^}]*\}/g, "{}")

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
