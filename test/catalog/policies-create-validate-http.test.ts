/**
 * Guardrail policies over HTTP against the real service and PostgreSQL:
 * create from YAML or JSON text (kept verbatim as source_yaml), 409 on a
 * taken id, 400 with every error's path, and validate (never fails on a bad
 * document). List/detail/delete, enabling one policy or an all-or-nothing
 * batch, the JSON Schema and drafting from a prompt are in
 * policies-read-enable-draft-http.test.ts.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { expectFailure, expectInvalid, keysOf, withRaw } from "../support/Api.js"
import { expectError, expectValidation } from "../support/Raw.js"
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
  JSON_TYPE,
  listPolicies,
  policyYaml,
  rowsOf,
  sendText,
  validatePolicy
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
})
