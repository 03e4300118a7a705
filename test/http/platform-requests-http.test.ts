/**
 * HTTP integration tests of the platform plumbing, against the real server
 * (real PostgreSQL through a fresh database, database event log): malformed
 * and invalid bodies (400), wrong content types (415), the 1 MiB body limit
 * (413), and request ids. Probes, the OpenAPI document, routing and the
 * last-resort 500 are in platform-probes-openapi-http.test.ts; the fuzzed
 * batch of garbage requests in platform-fuzz-http.test.ts.
 *
 * Every server is shared by the tests of its `layer(...)` block. The layers
 * are built with `excludeTestServices: true` so the server and the tests run
 * on the live clock (under the TestClock the server's timeouts and polling
 * loops would never advance).
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { call, expectError } from "../support/Raw.js"
import { signUp } from "../support/Tenants.js"
import { baseUrl, testServer } from "../support/TestServer.js"
import { answered, MiB, SANE_REQUEST_ID, SERVER_OPTIONS } from "./platform-http-support.js"

// ---------------------------------------------------------------- the real service, database event log

layer(testServer("database"), SERVER_OPTIONS)("platform HTTP (database event log)", (it) => {
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
})
