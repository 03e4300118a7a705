/**
 * Guardrail policies over HTTP against the real service and PostgreSQL:
 * create from YAML or JSON text (kept verbatim as source_yaml), 409 on a
 * taken id, 400 with every error's path, validate (never fails on a bad
 * document), list/detail/delete, enabling one policy or an all-or-nothing
 * batch, the JSON Schema, and drafting from a prompt.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { expectFailure, expectInvalid, keysOf, withRaw } from "../support/Api.js"
import { call, expectError, expectValidation } from "../support/Raw.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import {
  createPolicy,
  DETAIL_KEYS,
  detailPaths,
  expectErrorShape,
  expectRawStatus,
  expectWellFormedDetails,
  fieldOf,
  getPolicy,
  ids,
  JSON_TYPE,
  listPolicies,
  policyPath,
  policyYaml,
  rowsOf,
  sendText,
  setEnabled,
  SUMMARY_KEYS,
  validatePolicy,
  YAML
} from "./catalog-helpers.js"
import { yamlBytes } from "../support/Events.js"

/** A YAML document with comments, blank lines, quoting styles, non-ASCII text, trailing spaces and CRLF endings. */
const QUIRKY_YAML = [
  "# Refund policy, reviewed by legal   ",
  "id: quirky-policy",
  "",
  "description: 'Never promise a \"full\" refund — remboursement intégral 💸'   ",
  "family: content   # the content checker",
  "severity: high",
  "action: rewrite",
  "enabled: false",
  "owner_agent_id: support-bot",
  "match:",
  "  type: any_of",
  '  value: [full refund, "money back"]',
  "  target: content",
  "  case_sensitive: false",
  'rewrite: "[removed]"',
  "x-notes: extra keys are tolerated"
].join("\r\n")

const JSON_DOCUMENT = {
  id: "mask-card-numbers",
  description: "Mask card numbers in replies",
  family: "content",
  severity: "critical",
  action: "rewrite",
  match: {
    type: "regex",
    value: "\\b\\d{4}[- ]?\\d{4}[- ]?\\d{4}[- ]?\\d{4}\\b",
    target: "content"
  },
  rewrite: "[card number removed]"
}

/** The worked example of docs/policies.md ("Validation errors"): five problems at once. */
const FIVE_PROBLEMS = `id: p1
family: nope
severity: low
action: rewrite
match:
  type: regex
  value: '(?<=a)b'
  target: headers.x
`

layer(testServer("database"), SERVER_OPTIONS)("policies over HTTP", (it) => {
  describe("create", () => {
    it.effect("POST with YAML answers 201 PolicyDetail and keeps source_yaml byte for byte", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const created = yield* withRaw(
          owner.api.policies.createPolicy({ payload: yamlBytes(QUIRKY_YAML), withResponse: true })
        )
        expect(keysOf(created.body)).toEqual(DETAIL_KEYS)
        expect(created.body).toEqual({
          id: "quirky-policy",
          description: 'Never promise a "full" refund — remboursement intégral 💸',
          family: "content",
          severity: "high",
          action: "rewrite",
          enabled: false,
          owner_agent_id: "support-bot",
          source_yaml: QUIRKY_YAML,
          version: 1
        })
        const read = yield* getPolicy(owner, "quirky-policy")
        expect(read).toEqual(created.value)
        expect(Buffer.from(read.source_yaml, "utf8").equals(Buffer.from(QUIRKY_YAML, "utf8"))).toBe(true)
      })
    )

    it.effect("POST with JSON text (application/json) answers 201 and keeps the JSON text as source_yaml", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        // Raw: the client sends documents as application/yaml.
        const text = JSON.stringify(JSON_DOCUMENT, null, 4) + "\n"
        const created = expectRawStatus(yield* sendText(base, owner.jwt, "POST", "/v1/policies", text, JSON_TYPE), 201)
        expect(created).toEqual({
          id: "mask-card-numbers",
          description: "Mask card numbers in replies",
          family: "content",
          severity: "critical",
          action: "rewrite",
          enabled: true,
          owner_agent_id: null,
          source_yaml: text,
          version: 1
        })
        expect((yield* getPolicy(owner, "mask-card-numbers")).source_yaml).toBe(text)
      })
    )

    it.effect("enabled defaults to true on create; enabled: false is kept", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        expect((yield* createPolicy(owner, policyYaml("default-on"))).enabled).toBe(true)
        expect((yield* createPolicy(owner, policyYaml("starts-off", { enabled: false }))).enabled).toBe(false)
        expect((yield* getPolicy(owner, "starts-off")).enabled).toBe(false)
      })
    )

    it.effect("a taken id is 409 policy_exists (YAML or JSON); the first document stays", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const first = yield* createPolicy(owner, policyYaml("taken-id"))
        yield* expectFailure(
          createPolicy(owner, policyYaml("taken-id", { action: "defer", description: "Another one" })),
          409,
          "policy_exists"
        )
        // Raw: the same id as application/json.
        const asJson = yield* sendText(
          base,
          owner.jwt,
          "POST",
          "/v1/policies",
          JSON.stringify({ ...JSON_DOCUMENT, id: "taken-id" }),
          JSON_TYPE
        )
        expectError(asJson, 409, "policy_exists")
        expect(yield* getPolicy(owner, "taken-id")).toEqual(first)
        expect(yield* listPolicies(owner)).toHaveLength(1)
      })
    )

    it.effect(
      "an invalid document is 400 validation_failed listing every error with its path; nothing is created",
      () =>
        Effect.gen(function* () {
          const base = yield* baseUrl
          const owner = yield* tenant(base)
          const error = yield* expectInvalid(createPolicy(owner, FIVE_PROBLEMS), "rewrite")
          expectWellFormedDetails(error)
          expect(detailPaths(error).sort()).toEqual(["description", "family", "match.target", "match.value", "rewrite"])
          expect(error.details!.find((detail) => detail.path === "match.value")!.message).toMatch(
            /^Unsupported regex: invalid perl operator/
          )
          yield* expectFailure(getPolicy(owner, "p1"), 404, "policy_not_found")
          expect(yield* listPolicies(owner)).toEqual([])
        })
    )

    it.effect(
      "each kind of problem names its own path: match.type, rewrite, match.value (a regex RE2 cannot run), id",
      () =>
        Effect.gen(function* () {
          const base = yield* baseUrl
          const owner = yield* tenant(base)
          const post = (text: string) => createPolicy(owner, text)
          const badType = yield* expectInvalid(
            post(policyYaml("bad-type").replace("type: literal", "type: glob")),
            "match.type"
          )
          expect(detailPaths(badType)).toEqual(["match.type"])

          const noRewrite = yield* expectInvalid(
            post(policyYaml("no-rewrite").replace("action: deny", "action: rewrite")),
            "rewrite"
          )
          expect(detailPaths(noRewrite)).toEqual(["rewrite"])

          const unsafe = {
            ...JSON_DOCUMENT,
            id: "unsafe-regex",
            match: { type: "regex", value: "(['\"]).*\\1", target: "content" }
          }
          // Raw: a JSON document as application/json.
          const unsafeResponse = yield* sendText(
            base,
            owner.jwt,
            "POST",
            "/v1/policies",
            JSON.stringify(unsafe),
            JSON_TYPE
          )
          const unsafeError = expectValidation(unsafeResponse, "match.value")
          expect(detailPaths(unsafeError)).toEqual(["match.value"])

          yield* expectInvalid(post(policyYaml("Bad-Id!")), "id")
          yield* expectInvalid(post(policyYaml("x").replace("severity: high", "severity: extreme")), "severity")
          yield* expectInvalid(
            post(policyYaml("x").replace("  target: content", "  target: headers.x")),
            "match.target"
          )
          expect(yield* listPolicies(owner)).toEqual([])
        })
    )

    it.effect("syntax errors, an empty body and invalid UTF-8 are 400 with the empty path; text/plain is 415", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const error = yield* expectInvalid(
          createPolicy(owner, "id: a\ndescription: d\nfamily: content\n  severity: low\n"),
          ""
        )
        expect(error.message).toContain("line 3, column 9")
        yield* expectInvalid(createPolicy(owner, ""), "")
        // Raw: a JSON list as application/json.
        expectValidation(yield* sendText(base, owner.jwt, "POST", "/v1/policies", "[1, 2]", JSON_TYPE), "")
        yield* expectInvalid(
          owner.api.policies.createPolicy({ payload: new Uint8Array([0x69, 0x64, 0x3a, 0x20, 0xc3, 0x28, 0x0a]) }),
          ""
        )
        // Raw: a media type the contract does not accept.
        expectError(
          yield* sendText(base, owner.jwt, "POST", "/v1/policies", policyYaml("plain"), "text/plain"),
          415,
          "unsupported_media_type"
        )
        expect(yield* listPolicies(owner)).toEqual([])
      })
    )

    it.effect("a text the database cannot store (NUL, lone surrogate) is 400, never 500", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const documents = [
          policyYaml("nul-escape", { description: '"a\\0b"' }),
          policyYaml("surrogate-escape", { description: '"a\\uD800b"' }),
          policyYaml("raw-nul", { description: '"a\u0000b"' }),
          policyYaml("nul-in-value", { value: '"full\\0refund"' })
        ]
        for (const text of documents) {
          expectErrorShape(yield* expectFailure(createPolicy(owner, text), 400))
          // validate reports the same document as invalid, never 500.
          const checked = yield* validatePolicy(owner, text)
          expect(checked.valid, JSON.stringify(checked)).toBe(false)
        }
        // Raw: a JSON document as application/json.
        const json = JSON.stringify({ ...JSON_DOCUMENT, id: "json-nul", description: "a\u0000b" })
        const response = yield* sendText(base, owner.jwt, "POST", "/v1/policies", json, JSON_TYPE)
        expect(response.status, `${JSON.stringify(json)}: ${response.text}`).toBe(400)
        expectError(response, 400)
        const checked = yield* sendText(base, owner.jwt, "POST", "/v1/policies/validate", json, JSON_TYPE)
        expect(fieldOf(expectRawStatus(checked, 200), "valid"), checked.text).toBe(false)
        expect(yield* listPolicies(owner)).toEqual([])
      })
    )

    it.effect("ids that collide with the collection's own routes (schema, batch) are refused with 400 at id", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        // GET /v1/policies/schema serves the JSON Schema and PATCH /v1/policies/batch/enabled the batch:
        // a policy with such an id could never be read or toggled through its by-id routes.
        for (const id of ["schema", "batch"]) {
          yield* expectInvalid(createPolicy(owner, policyYaml(id)), "id")
        }
      })
    )
  })

  describe("validate", () => {
    it.effect("a valid document: 200 {valid: true, policy_id, errors: []}; nothing is created", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const yaml = yield* validatePolicy(owner, policyYaml("only-checked"))
        expect(yaml).toEqual({ valid: true, policy_id: "only-checked", errors: [] })
        // Raw: a JSON document as application/json.
        const json = expectRawStatus(
          yield* sendText(base, owner.jwt, "POST", "/v1/policies/validate", JSON.stringify(JSON_DOCUMENT), JSON_TYPE),
          200
        )
        expect(json).toEqual({ valid: true, policy_id: "mask-card-numbers", errors: [] })
        expect(yield* listPolicies(owner)).toEqual([])
      })
    )

    it.effect("an invalid document: 200 {valid: false, errors: [{path, message}]} with every problem", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const result = yield* validatePolicy(owner, FIVE_PROBLEMS)
        expect(result.valid).toBe(false)
        expect(result.policy_id).toBe("p1")
        expect(result.errors.map((error) => error.path).sort()).toEqual([
          "description",
          "family",
          "match.target",
          "match.value",
          "rewrite"
        ])
        for (const error of result.errors) expect(error.message.length).toBeGreaterThan(0)
        expect(result.errors).toContainEqual({
          path: "rewrite",
          message: "rewrite (the replacement text) is required when action is rewrite"
        })
        // The create endpoint reports the same list.
        const error = yield* expectInvalid(createPolicy(owner, FIVE_PROBLEMS), "rewrite")
        expect(error.details).toEqual(result.errors)
      })
    )

    it.effect(
      "YAML syntax errors give line and column in the message; empty and non-mapping documents are invalid",
      () =>
        Effect.gen(function* () {
          const base = yield* baseUrl
          const owner = yield* tenant(base)
          const validate = (text: string) => validatePolicy(owner, text)
          const syntax = yield* validate("id: a\ndescription: d\nfamily: content\n  severity: low\n")
          expect(syntax.valid).toBe(false)
          expect(syntax.errors[0]).toEqual({
            path: "",
            message: "YAML syntax error at line 3, column 9: Nested mappings are not allowed in compact mappings"
          })
          const duplicate = yield* validate("id: a\nid: b\n")
          expect(duplicate.errors[0]!.message).toMatch(/^YAML syntax error at line 2, column 1: .*unique/)
          // Raw: broken JSON as application/json.
          const jsonResponse = yield* sendText(
            base,
            owner.jwt,
            "POST",
            "/v1/policies/validate",
            '{\n  "id": "a"\n  "description": "d"\n}',
            JSON_TYPE
          )
          const json = expectRawStatus(jsonResponse, 200)
          expect(fieldOf(json, "valid")).toBe(false)
          expect(fieldOf(rowsOf(json, "errors")[0], "message")).toMatch(/^YAML syntax error at line \d+, column \d+: /)
          expect(yield* validate("")).toEqual({
            valid: false,
            policy_id: null,
            errors: [{ path: "", message: "The document is empty; expected YAML or JSON" }]
          })
          const list = yield* validate("- id: a\n")
          expect(list.valid).toBe(false)
          expect(list.errors[0]!.path).toBe("")
        })
    )
  })

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
