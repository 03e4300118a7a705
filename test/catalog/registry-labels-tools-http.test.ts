/**
 * Label policies and tool metadata over HTTP against the real service and
 * PostgreSQL: upserts, reads, lists, deletes, and validation (400 with
 * paths). Knowledge sources are in registry-knowledge-sources-http.test.ts.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { expectFailure, keysOf, withRaw } from "../support/Api.js"
import { call, expectValidation, isErrorBody } from "../support/Raw.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import { fieldOf, rowsOf } from "./catalog-helpers.js"

layer(testServer("database"), SERVER_OPTIONS)("label policies, tool metadata, knowledge sources over HTTP", (it) => {
  describe("label policies", () => {
    it.effect("POST upserts a label policy from flat fields; enabled defaults to true; GET reads it back", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const { api } = yield* tenant(base)
        const created = yield* api.labelPolicies.upsertLabelPolicy({
          payload: {
            origin: "web_page",
            confidentiality: "public",
            integrity: { level: "low", reasons: ["untrusted"] },
            trust: 0.25
          }
        })
        expect(created).toEqual({
          enabled: true,
          policy: {
            origin: "web_page",
            confidentiality: "public",
            integrity: { level: "low", reasons: ["untrusted"] },
            trust: 0.25
          }
        })
        expect(yield* api.labelPolicies.getLabelPolicy({ path: { origin: "web_page" } })).toEqual(created)
      })
    )

    it.effect("a second upsert replaces the policy; absent fields become null; enabled false is kept", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const { api } = yield* tenant(base)
        yield* api.labelPolicies.upsertLabelPolicy({
          payload: { origin: "email", confidentiality: "secret", integrity: "high", trust: [1, 2] }
        })
        const replaced = yield* api.labelPolicies.upsertLabelPolicy({
          payload: { origin: "email", enabled: false, trust: null }
        })
        expect(replaced).toEqual({
          enabled: false,
          policy: { origin: "email", confidentiality: null, integrity: null, trust: null }
        })
        expect(yield* api.labelPolicies.getLabelPolicy({ path: { origin: "email" } })).toEqual(replaced)
        const { policies } = yield* api.labelPolicies.listLabelPolicies()
        expect(policies).toEqual([replaced])
      })
    )

    it.effect("GET /v1/label-policies lists {policies}; by origin: unknown is 404; DELETE is 204 then 404", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const { api } = yield* tenant(base)
        expect(yield* api.labelPolicies.listLabelPolicies()).toEqual({ policies: [] })
        for (const origin of ["user", "tool_output", "retrieval"]) {
          yield* api.labelPolicies.upsertLabelPolicy({ payload: { origin, trust: origin } })
        }
        const listed = yield* withRaw(api.labelPolicies.listLabelPolicies({ withResponse: true }))
        expect(listed.value.policies.map((entry) => entry.policy.origin).sort()).toEqual([
          "retrieval",
          "tool_output",
          "user"
        ])
        for (const entry of rowsOf(listed.body, "policies")) {
          expect(keysOf(entry)).toEqual(["enabled", "policy"])
          expect(keysOf(fieldOf(entry, "policy"))).toEqual(["confidentiality", "integrity", "origin", "trust"])
        }
        yield* expectFailure(
          api.labelPolicies.getLabelPolicy({ path: { origin: "unknown_origin" } }),
          404,
          "label_policy_not_found"
        )
        const deleted = yield* withRaw(
          api.labelPolicies.deleteLabelPolicy({ path: { origin: "user" }, withResponse: true })
        )
        expect(deleted.status, deleted.text).toBe(204)
        expect(deleted.text).toBe("")
        yield* expectFailure(
          api.labelPolicies.getLabelPolicy({ path: { origin: "user" } }),
          404,
          "label_policy_not_found"
        )
        yield* expectFailure(
          api.labelPolicies.deleteLabelPolicy({ path: { origin: "user" } }),
          404,
          "label_policy_not_found"
        )
        const after = yield* api.labelPolicies.listLabelPolicies()
        expect(after.policies.map((entry) => entry.policy.origin).sort()).toEqual(["retrieval", "tool_output"])
      })
    )

    it.effect("origin must be snake_case and present: 400 at origin (body or path), nothing stored", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const token = owner.jwt
        // Raw: bodies and a path the contract's schema refuses.
        for (const origin of ["Web-Page", "web-page", "WebPage", "1st_party", "", "web page"]) {
          expectValidation(
            yield* call(base, "POST", "/v1/label-policies", { token, body: { origin, trust: 1 } }),
            "origin"
          )
        }
        expectValidation(yield* call(base, "POST", "/v1/label-policies", { token, body: { trust: 1 } }), "origin")
        expectValidation(
          yield* call(base, "POST", "/v1/label-policies", { token, body: { origin: "user", enabled: "yes" } }),
          "enabled"
        )
        const byPath = yield* call(base, "GET", "/v1/label-policies/Web-Page", { token })
        expect([400, 404], byPath.text).toContain(byPath.status)
        expect(isErrorBody(byPath.body), byPath.text).toBe(true)
        expect(yield* owner.api.labelPolicies.listLabelPolicies()).toEqual({ policies: [] })
      })
    )
  })

  describe("tool metadata", () => {
    const refund = {
      tool: "issue_refund",
      reversible: false,
      side_effect: "financial",
      sandbox_hint: { network: false },
      approval: { required_above_minor: 10_000 },
      params: [
        {
          path: "amount_minor",
          role: "authority_bearing",
          limit: { max: 50_000 },
          allowed_sources: [{ kind: "tool_output", origin: "user", source_id: "order_lookup" }]
        },
        { path: "reason", role: "free_text" }
      ]
    }

    it.effect("POST upserts metadata ({enabled, metadata}); enabled defaults to true; GET reads it back", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const { api } = yield* tenant(base)
        const created = yield* api.toolMetadata.upsertToolMetadata({ payload: refund })
        expect(created.enabled).toBe(true)
        expect(created.metadata).toEqual(refund)
        expect(yield* api.toolMetadata.getToolMetadata({ path: { tool: "issue_refund" } })).toEqual(created)
        const minimal = yield* withRaw(
          api.toolMetadata.upsertToolMetadata({
            payload: { tool: "lookup_order", reversible: true, side_effect: "none", enabled: false },
            withResponse: true
          })
        )
        expect(minimal.value.enabled).toBe(false)
        expect(minimal.value.metadata).toMatchObject({ tool: "lookup_order", reversible: true, side_effect: "none" })
        // As sent: the decoded metadata could not hold it.
        expect(fieldOf(minimal.body, "metadata")).not.toHaveProperty("enabled")
      })
    )

    it.effect("a second upsert replaces the metadata; GET /v1/tool-metadata lists {tools}", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const { api } = yield* tenant(base)
        yield* api.toolMetadata.upsertToolMetadata({ payload: refund })
        const replacement = { tool: "issue_refund", reversible: true, side_effect: "none", enabled: false }
        const replaced = yield* withRaw(
          api.toolMetadata.upsertToolMetadata({ payload: replacement, withResponse: true })
        )
        expect(replaced.value.enabled).toBe(false)
        expect(replaced.value.metadata).toMatchObject({ tool: "issue_refund", reversible: true, side_effect: "none" })
        expect(fieldOf(replaced.body, "metadata")).not.toHaveProperty("params")
        yield* api.toolMetadata.upsertToolMetadata({
          payload: { tool: "send_email", reversible: false, side_effect: "external_message" }
        })
        const { tools } = yield* api.toolMetadata.listToolMetadata()
        expect(tools.map((entry) => entry.metadata.tool).sort()).toEqual(["issue_refund", "send_email"])
        expect(tools.find((entry) => entry.metadata.tool === "issue_refund")).toEqual(replaced.value)
      })
    )

    it.effect("GET of an unknown tool is 404; DELETE is 204, then GET and DELETE are 404", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const { api } = yield* tenant(base)
        yield* expectFailure(api.toolMetadata.getToolMetadata({ path: { tool: "nope" } }), 404, "tool_not_found")
        yield* api.toolMetadata.upsertToolMetadata({ payload: refund })
        const deleted = yield* withRaw(
          api.toolMetadata.deleteToolMetadata({ path: { tool: "issue_refund" }, withResponse: true })
        )
        expect(deleted.status, deleted.text).toBe(204)
        expect(deleted.text).toBe("")
        yield* expectFailure(
          api.toolMetadata.getToolMetadata({ path: { tool: "issue_refund" } }),
          404,
          "tool_not_found"
        )
        yield* expectFailure(
          api.toolMetadata.deleteToolMetadata({ path: { tool: "issue_refund" } }),
          404,
          "tool_not_found"
        )
        expect(yield* api.toolMetadata.listToolMetadata()).toEqual({ tools: [] })
      })
    )

    it.effect("missing or mistyped required fields are 400 validation_failed at their path; nothing stored", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const token = owner.jwt
        const cases: ReadonlyArray<readonly [Record<string, unknown>, string]> = [
          [{ reversible: true, side_effect: "none" }, "tool"],
          [{ tool: "t", side_effect: "none" }, "reversible"],
          [{ tool: "t", reversible: true }, "side_effect"],
          [{ tool: "", reversible: true, side_effect: "none" }, "tool"],
          [{ tool: "t", reversible: "no", side_effect: "none" }, "reversible"],
          [{ tool: "t", reversible: true, side_effect: "none", params: [{ role: "x" }] }, "params.0.path"],
          [
            {
              tool: "t",
              reversible: true,
              side_effect: "none",
              params: [{ path: "p", role: "r", allowed_sources: [{ kind: "k", origin: "Web-Page", source_id: "s" }] }]
            },
            "params.0.allowed_sources.0.origin"
          ]
        ]
        // Raw: every case is a body the contract's schema refuses.
        for (const [body, path] of cases) {
          expectValidation(yield* call(base, "POST", "/v1/tool-metadata", { token, body }), path)
        }
        expect(yield* owner.api.toolMetadata.listToolMetadata()).toEqual({ tools: [] })
      })
    )
  })
})
