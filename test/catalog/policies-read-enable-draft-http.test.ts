/**
 * Guardrail policies over HTTP against the real service and PostgreSQL:
 * list/detail/delete, enabling one policy or an all-or-nothing batch, the
 * JSON Schema, and drafting from a prompt. Create and validate are in
 * policies-create-validate-http.test.ts.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { expectFailure, keysOf, withRaw } from "../support/Api.js"
import { call, expectError, expectValidation } from "../support/Raw.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import {
  createPolicy,
  fieldOf,
  getPolicy,
  ids,
  listPolicies,
  policyPath,
  policyYaml,
  rowsOf,
  setEnabled,
  SUMMARY_KEYS,
  YAML
} from "./catalog-helpers.js"

layer(testServer("database"), SERVER_OPTIONS)("policies over HTTP", (it) => {
  describe("read and delete", () => {
    it.effect("GET /v1/policies lists summaries (no source_yaml), newest first", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        expect(yield* owner.api.policies.listPolicies()).toEqual({ policies: [] })
        yield* createPolicy(owner, policyYaml("older"))
        yield* Effect.sleep("5 millis")
        yield* createPolicy(owner, policyYaml("newer", { owner: "some-bot", enabled: false }))
        const answer = yield* withRaw(owner.api.policies.listPolicies({ withResponse: true }))
        const listed = answer.value.policies
        expect(listed.map((policy) => policy.id)).toEqual(["newer", "older"])
        for (const policy of rowsOf(answer.body, "policies")) expect(keysOf(policy)).toEqual(SUMMARY_KEYS)
        expect(listed[0]).toEqual({
          id: "newer",
          description: "Never promise a refund",
          family: "content",
          severity: "high",
          action: "deny",
          enabled: false,
          owner_agent_id: "some-bot"
        })
      })
    )

    it.effect("GET of an unknown id is 404 policy_not_found", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        yield* expectFailure(getPolicy(owner, "never-created"), 404, "policy_not_found")
      })
    )

    it.effect("DELETE answers 204 with an empty body, then GET and DELETE are 404", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        yield* createPolicy(owner, policyYaml("short-lived"))
        yield* createPolicy(owner, policyYaml("survivor"))
        const deleted = yield* withRaw(
          owner.api.policies.deletePolicy({ path: policyPath("short-lived"), withResponse: true })
        )
        expect(deleted.status, deleted.text).toBe(204)
        expect(deleted.text).toBe("")
        yield* expectFailure(getPolicy(owner, "short-lived"), 404, "policy_not_found")
        yield* expectFailure(
          owner.api.policies.deletePolicy({ path: policyPath("short-lived") }),
          404,
          "policy_not_found"
        )
        expect(ids(yield* listPolicies(owner))).toEqual(["survivor"])
        // The id is free again.
        yield* createPolicy(owner, policyYaml("short-lived"))
      })
    )
  })

  describe("enable and disable", () => {
    it.effect("PATCH /{id}/enabled flips enabled, answers PolicyDetail, and leaves source_yaml untouched", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const created = yield* createPolicy(owner, policyYaml("toggled"))
        const off = yield* setEnabled(owner, "toggled", false)
        expect(off).toEqual({ ...created, enabled: false })
        expect(yield* getPolicy(owner, "toggled")).toEqual(off)
        const offAgain = yield* setEnabled(owner, "toggled", false)
        expect(offAgain.enabled).toBe(false)
        const on = yield* setEnabled(owner, "toggled", true)
        expect(on).toEqual(created)
      })
    )

    it.effect("PATCH /{id}/enabled: unknown id is 404; a body without a boolean is 400", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        yield* createPolicy(owner, policyYaml("patch-target"))
        yield* expectFailure(setEnabled(owner, "nobody-here", true), 404, "policy_not_found")
        // Raw: bodies the contract's schema refuses.
        expectValidation(
          yield* call(base, "PATCH", "/v1/policies/patch-target/enabled", {
            token: owner.jwt,
            body: { enabled: "no" }
          }),
          "enabled"
        )
        expectValidation(
          yield* call(base, "PATCH", "/v1/policies/patch-target/enabled", { token: owner.jwt, body: {} }),
          "enabled"
        )
        expect((yield* getPolicy(owner, "patch-target")).enabled).toBe(true)
      })
    )

    it.effect("PATCH /batch/enabled changes every listed policy and answers their summaries", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        for (const id of ["b1", "b2", "b3"]) yield* createPolicy(owner, policyYaml(id, { enabled: false }))
        const answer = yield* withRaw(
          owner.api.policies.setPoliciesEnabled({
            payload: { enabled: true, ids: ["b1", "b2", "b1"] },
            withResponse: true
          })
        )
        const { policies } = answer.value
        expect(ids(policies)).toEqual(["b1", "b2"])
        for (const policy of rowsOf(answer.body, "policies")) expect(keysOf(policy)).toEqual(SUMMARY_KEYS)
        for (const policy of policies) expect(policy.enabled).toBe(true)
        expect((yield* getPolicy(owner, "b1")).enabled).toBe(true)
        expect((yield* getPolicy(owner, "b2")).enabled).toBe(true)
        expect((yield* getPolicy(owner, "b3")).enabled).toBe(false)
      })
    )

    it.effect("PATCH /batch/enabled is all-or-nothing: an unknown id is 404 and nothing changes", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        yield* createPolicy(owner, policyYaml("keep-on"))
        yield* createPolicy(owner, policyYaml("keep-off", { enabled: false }))
        for (const enabled of [false, true]) {
          const error = yield* expectFailure(
            owner.api.policies.setPoliciesEnabled({
              payload: { enabled, ids: ["keep-on", "keep-off", "does-not-exist"] }
            }),
            404,
            "policy_not_found"
          )
          expect(error.message).toContain("does-not-exist")
          expect(error.message).not.toContain("keep-on")
          expect((yield* getPolicy(owner, "keep-on")).enabled).toBe(true)
          expect((yield* getPolicy(owner, "keep-off")).enabled).toBe(false)
        }
        // Raw: bodies the contract's schema refuses.
        expectValidation(
          yield* call(base, "PATCH", "/v1/policies/batch/enabled", { token: owner.jwt, body: { enabled: true } }),
          "ids"
        )
        expectValidation(
          yield* call(base, "PATCH", "/v1/policies/batch/enabled", {
            token: owner.jwt,
            body: { enabled: "yes", ids: ["keep-off"] }
          }),
          "enabled"
        )
        expect((yield* getPolicy(owner, "keep-off")).enabled).toBe(false)
      })
    )
  })

  describe("schema and draft", () => {
    it.effect("GET /v1/policies/schema is a draft-07 JSON Schema whose properties include id, match and action", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const answer = yield* withRaw(owner.api.policies.getPolicySchema({ withResponse: true }))
        expect(answer.headers["content-type"]).toContain("application/json")
        keysOf(answer.value) // a JSON object
        const schema = answer.value as Record<string, unknown>
        expect(schema["$schema"]).toBe("http://json-schema.org/draft-07/schema#")
        // The root may be a local reference ("#/..." JSON pointer) into the document itself.
        const resolve = (node: Record<string, unknown>): Record<string, unknown> => {
          const ref = node["$ref"]
          if (typeof ref !== "string") return node
          expect(ref.startsWith("#/")).toBe(true)
          const target = ref
            .slice(2)
            .split("/")
            .reduce<unknown>((at, key) => (at as Record<string, unknown>)[key], schema)
          return resolve(target as Record<string, unknown>)
        }
        const root = resolve(schema)
        expect(root["type"]).toBe("object")
        const properties = root["properties"] as Record<string, Record<string, unknown>>
        expect(Object.keys(properties)).toEqual(
          expect.arrayContaining(["id", "description", "family", "severity", "action", "match", "enabled", "rewrite"])
        )
        expect(root["required"]).toEqual(expect.arrayContaining(["id", "match", "action"]))
        expect(resolve(properties["action"]!)["enum"]).toEqual(["permit", "deny", "defer", "rewrite"])
        // match is one of several shapes (simple, detectors, all/any/not: tests in policy-language-http.test.ts).
        const simple = (resolve(properties["match"]!)["anyOf"] as Array<Record<string, unknown>>).map(resolve)[0]!
        expect(Object.keys(simple["properties"] as object)).toEqual(
          expect.arrayContaining(["type", "value", "target", "case_sensitive", "normalize"])
        )
      })
    )

    it.effect("POST /v1/policies/draft turns 'never promise a refund' into a deny draft", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const answer = yield* withRaw(
          owner.api.policies.draftPolicy({ payload: { prompt: "never promise a refund" }, withResponse: true })
        )
        const { draft } = answer.value
        expect(keysOf(fieldOf(answer.body, "draft"))).toEqual(
          [
            "action",
            "description",
            "enabled",
            "family",
            "id",
            "match",
            "match_type",
            "match_value",
            "rewrite",
            "severity"
          ].sort()
        )
        expect(draft.action).toBe("deny")
        expect(draft.id).toMatch(/^[a-z0-9][a-z0-9_.-]{0,127}$/)
        expect(draft.match_value.toLowerCase()).toContain("refund")
        expect(["literal", "regex", "any_of"]).toContain(draft.match_type)
        // Nothing is created by drafting.
        expect(yield* listPolicies(owner)).toEqual([])
      })
    )

    it.effect("a prompt the drafter cannot read is 422 draft_not_understood listing example phrasings", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const error = yield* expectFailure(
          owner.api.policies.draftPolicy({ payload: { prompt: "qwzx blorp fnord zzzt" } }),
          422,
          "draft_not_understood"
        )
        expect(error.message).toContain("Never promise a refund")
        expect(error.message.split('"').length).toBeGreaterThan(4)
      })
    )

    it.effect("a missing, empty or non-string prompt is 400 at prompt; a non-JSON body is 400 or 415", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        // Raw: bodies the contract's schema refuses, malformed JSON and another media type.
        for (const body of [{}, { prompt: "" }, { prompt: 42 }]) {
          expectValidation(yield* call(base, "POST", "/v1/policies/draft", { token: owner.jwt, body }), "prompt")
        }
        const malformed = yield* call(base, "POST", "/v1/policies/draft", { token: owner.jwt, raw: "{prompt:" })
        expectError(malformed, 400)
        const yamlBody = yield* call(base, "POST", "/v1/policies/draft", {
          token: owner.jwt,
          raw: "prompt: never promise a refund",
          contentType: YAML
        })
        expectError(yamlBody, 415, "unsupported_media_type")
      })
    )
  })
})
