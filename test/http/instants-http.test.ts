/**
 * Time bounds in requests (trace and audit filters, analytics queries, impact
 * replay windows) take RFC 3339 instants only. `Date` reads `-1`, `1.5` or
 * `2026-02-30` as some date; such values must be a 400 naming the field, not
 * a surprising window or a value the database refuses.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { call, expectValidation } from "../support/Raw.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"

const NOT_INSTANTS = [
  "-1",
  "0",
  "1.5",
  "-0",
  "2026-02-30T00:00:00Z",
  "2025-02-29T00:00:00Z",
  "0000-01-01T00:00:00Z",
  "2026-11-24T24:00:00Z",
  "2026-11-24T10:00:00",
  "2026-11-24",
  "November 24, 2026"
]
const INSTANTS = ["2024-02-29T23:59:59.999Z", "2026-11-24T10:00:00+01:00", "2026-11-24T10:00Z"]

layer(testServer("database"), SERVER_OPTIONS)("instants in requests", (it) => {
  describe("refused with a 400 naming the field; real instants are taken", () => {
    it.effect("GET /v1/traces and GET /v1/audit-events: start and end", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        for (const path of ["/v1/traces", "/v1/audit-events"]) {
          for (const value of NOT_INSTANTS) {
            expectValidation(
              yield* call(base, "GET", `${path}?start=${encodeURIComponent(value)}`, { token: owner.jwt }),
              "start"
            )
            expectValidation(
              yield* call(base, "GET", `${path}?end=${encodeURIComponent(value)}`, { token: owner.jwt }),
              "end"
            )
          }
          for (const value of INSTANTS) {
            const answer = yield* call(base, "GET", `${path}?start=${encodeURIComponent(value)}`, { token: owner.jwt })
            expect(answer.status, `${path} ${value}: ${answer.text}`).toBe(200)
          }
        }
      })
    )

    it.effect("POST /v1/analytics/query and POST /v1/policies/impact: start and end", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const analytics = (body: Record<string, unknown>) =>
          call(base, "POST", "/v1/analytics/query", { token: owner.jwt, body: { metric: "trace_count", ...body } })
        const impact = (body: Record<string, unknown>) =>
          call(base, "POST", "/v1/policies/impact", {
            token: owner.jwt,
            body: { disable_ids: [], start: "2026-11-01T00:00:00Z", end: "2026-11-02T00:00:00Z", ...body }
          })
        for (const value of NOT_INSTANTS) {
          expectValidation(yield* analytics({ start: value }), "start")
          expectValidation(yield* analytics({ end: value }), "end")
          expectValidation(yield* impact({ start: value }), "start")
          expectValidation(yield* impact({ end: value }), "end")
        }
        for (const value of INSTANTS) {
          const answer = yield* analytics({ start: value })
          expect(answer.status, `${value}: ${answer.text}`).toBe(200)
        }
        const accepted = yield* impact({ start: "2024-02-29T23:59:59.999Z", end: "2026-11-24T10:00:00+01:00" })
        expect(accepted.status, accepted.text).toBe(202)
      })
    )
  })
})
