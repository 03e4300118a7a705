/**
 * The generated OpenAPI document (`/openapi.json`, shown by `/docs`) as a
 * reader finds it: every operation has a summary and a description, lists
 * only the error statuses it can answer, and `POST /v1/events` shows a
 * complete example of each event kind, each decided as sent.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { call } from "../support/Raw.js"
import { createKey, tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"

type Operation = Record<string, unknown> & {
  readonly responses?: Record<string, unknown>
  readonly requestBody?: {
    readonly content?: Record<string, { readonly examples?: Record<string, { value: unknown }> }>
  }
}
type Document = { readonly paths: Record<string, Record<string, Operation>> }

const fetchDocument = Effect.gen(function* () {
  const response = yield* call(yield* baseUrl, "GET", "/openapi.json")
  expect(response.status).toBe(200)
  return response.body as Document
})

const errorsOf = (doc: Document, path: string, method: string) =>
  Object.keys(doc.paths[path]?.[method]?.responses ?? {})
    .map(Number)
    .filter((status) => status >= 400)

layer(testServer("database"), SERVER_OPTIONS)("the OpenAPI document", (it) => {
  describe("operations", () => {
    it.effect("every operation has a summary and a description", () =>
      Effect.gen(function* () {
        const doc = yield* fetchDocument
        const undocumented: Array<string> = []
        let operations = 0
        for (const [path, byMethod] of Object.entries(doc.paths)) {
          for (const [method, operation] of Object.entries(byMethod)) {
            operations++
            for (const field of ["summary", "description"]) {
              const text = operation[field]
              if (typeof text !== "string" || text.trim().length < 3) undocumented.push(`${method} ${path} ${field}`)
            }
          }
        }
        expect(operations).toBeGreaterThan(100)
        expect(undocumented).toEqual([])
        expect(doc.paths["/v1/api-keys"]?.["get"]?.["summary"]).toBe("List API keys")
        expect(doc.paths["/v1/api-keys"]?.["get"]?.["description"]).toContain("runtime keys are refused")
        expect(doc.paths["/v1/events"]?.["post"]?.["description"]).toContain("or a workspace runtime key")
      })
    )

    it.effect("the two retried writes document their Idempotency-Key header", () =>
      Effect.gen(function* () {
        const doc = yield* fetchDocument
        for (const path of ["/v1/events", "/v1/runs/{id}/events"]) {
          const parameters = (doc.paths[path]?.["post"]?.["parameters"] ?? []) as ReadonlyArray<Record<string, unknown>>
          expect(
            parameters.find((parameter) => parameter["name"] === "Idempotency-Key"),
            path
          ).toMatchObject({
            in: "header",
            required: false,
            schema: { type: "string", maxLength: 255 }
          })
        }
      })
    )

    it.effect("each operation lists only the error statuses it can answer", () =>
      Effect.gen(function* () {
        const doc = yield* fetchDocument
        // No credential, no parameters: only a server fault or a shutdown.
        expect(errorsOf(doc, "/healthz", "get")).toEqual([500, 503])
        // Authenticated, with a body: no budget, upstream or not-implemented statuses.
        expect(errorsOf(doc, "/v1/events", "post")).toEqual([400, 401, 403, 404, 409, 413, 415, 500, 503])
        expect(errorsOf(doc, "/v1/api-keys", "get")).toEqual([401, 403, 404, 500, 503])
        expect(errorsOf(doc, "/v1/auth/login", "post")).toContain(429)
        expect(errorsOf(doc, "/v1/policies/draft", "post")).toContain(422)
        // Job queues: a workspace at its cap of queued and running jobs (too_many_jobs).
        expect(errorsOf(doc, "/v1/redteam/dispatch", "post")).toContain(429)
        expect(errorsOf(doc, "/v1/policies/impact", "post")).toContain(429)
        expect(errorsOf(doc, "/v1/redteam/jobs", "get")).not.toContain(429)
        // The gateway's proxy also answers budgets (402), limits (429) and its provider's failures (502, 504).
        const proxy = Object.keys(doc.paths).find((path) => path.endsWith("/chat/completions"))!
        expect(errorsOf(doc, proxy, "post")).toEqual(expect.arrayContaining([402, 429, 502, 504]))
        const anywhere = new Set(
          Object.entries(doc.paths).flatMap(([path, byMethod]) =>
            Object.keys(byMethod).flatMap((method) => errorsOf(doc, path, method))
          )
        )
        expect(anywhere.has(501)).toBe(false)
      })
    )
  })

  describe("POST /v1/events", () => {
    it.effect("shows a complete example of each event kind, each decided as sent with a runtime key", () =>
      Effect.gen(function* () {
        const doc = yield* fetchDocument
        const media = doc.paths["/v1/events"]?.["post"]?.requestBody?.content?.["application/json"]
        const examples = Object.values(media?.examples ?? {}).map((example) => example.value as { kind: string })
        expect(new Set(examples.map((example) => example.kind))).toEqual(
          new Set(["input.received", "tool.result", "output.proposed"])
        )
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const key = yield* createKey(owner)
        yield* owner.api.agents.createAgent({
          payload: new TextEncoder().encode(
            "agent_id: support-bot\ndisplay_name: Support Bot\nauthority: {}\nscope: {}\ntone:\n  target: neutral\n"
          )
        })
        for (const example of examples) {
          const decided = yield* call(base, "POST", "/v1/events", { token: key.plaintext_key, body: example })
          expect(decided.status, decided.text).toBe(200)
        }
      })
    )
  })
})
