/**
 * Guardrail policies over HTTP against the real service and PostgreSQL:
 * create from YAML or JSON text (kept verbatim as source_yaml), 409 on a
 * taken id, 400 with every error's path, validate (never fails on a bad
 * document), list/detail/delete, enabling one policy or an all-or-nothing
 * batch, the JSON Schema, and drafting from a prompt.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { call, expectError, expectStatus, expectValidation, SERVER_OPTIONS, tenant } from "../identity/http-helpers.js"
import { baseUrl, request, testServer } from "../support/TestServer.js"
import {
  createPolicy,
  DETAIL_KEYS,
  detailPaths,
  expectWellFormedDetails,
  getPolicy,
  ids,
  JSON_TYPE,
  listPolicies,
  type PolicyDetailBody,
  type PolicySummaryBody,
  policyYaml,
  sendText,
  setEnabled,
  sortedKeys,
  SUMMARY_KEYS,
  YAML
} from "./catalog-helpers.js"

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
        const response = yield* sendText(base, owner.jwt, "POST", "/v1/policies", QUIRKY_YAML)
        const created = expectStatus(response, 201) as PolicyDetailBody
        expect(sortedKeys(created)).toEqual(DETAIL_KEYS)
        expect(created).toEqual({
          id: "quirky-policy",
          description: 'Never promise a "full" refund — remboursement intégral 💸',
          family: "content",
          severity: "high",
          action: "rewrite",
          enabled: false,
          owner_agent_id: "support-bot",
          source_yaml: QUIRKY_YAML
        })
        const read = yield* getPolicy(base, owner.jwt, "quirky-policy")
        expect(read).toEqual(created)
        expect(Buffer.from(read.source_yaml, "utf8").equals(Buffer.from(QUIRKY_YAML, "utf8"))).toBe(true)
      })
    )

    it.effect("POST with JSON text (application/json) answers 201 and keeps the JSON text as source_yaml", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const text = JSON.stringify(JSON_DOCUMENT, null, 4) + "\n"
        const created = expectStatus(yield* sendText(base, owner.jwt, "POST", "/v1/policies", text, JSON_TYPE), 201)
        expect(created).toEqual({
          id: "mask-card-numbers",
          description: "Mask card numbers in replies",
          family: "content",
          severity: "critical",
          action: "rewrite",
          enabled: true,
          owner_agent_id: null,
          source_yaml: text
        })
        expect((yield* getPolicy(base, owner.jwt, "mask-card-numbers")).source_yaml).toBe(text)
      })
    )

    it.effect("enabled defaults to true on create; enabled: false is kept", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        expect((yield* createPolicy(base, owner.jwt, policyYaml("default-on"))).enabled).toBe(true)
        expect((yield* createPolicy(base, owner.jwt, policyYaml("starts-off", { enabled: false }))).enabled).toBe(false)
        expect((yield* getPolicy(base, owner.jwt, "starts-off")).enabled).toBe(false)
      })
    )

    it.effect("a taken id is 409 policy_exists (YAML or JSON); the first document stays", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const first = yield* createPolicy(base, owner.jwt, policyYaml("taken-id"))
        const again = yield* sendText(
          base,
          owner.jwt,
          "POST",
          "/v1/policies",
          policyYaml("taken-id", { action: "defer", description: "Another one" })
        )
        expectError(again, 409, "policy_exists")
        const asJson = yield* sendText(
          base,
          owner.jwt,
          "POST",
          "/v1/policies",
          JSON.stringify({ ...JSON_DOCUMENT, id: "taken-id" }),
          JSON_TYPE
        )
        expectError(asJson, 409, "policy_exists")
        expect(yield* getPolicy(base, owner.jwt, "taken-id")).toEqual(first)
        expect(yield* listPolicies(base, owner.jwt)).toHaveLength(1)
      })
    )

    it.effect(
      "an invalid document is 400 validation_failed listing every error with its path; nothing is created",
      () =>
        Effect.gen(function* () {
          const base = yield* baseUrl
          const owner = yield* tenant(base)
          const response = yield* sendText(base, owner.jwt, "POST", "/v1/policies", FIVE_PROBLEMS)
          expectValidation(response, "rewrite")
          expectWellFormedDetails(response)
          expect(detailPaths(response).sort()).toEqual([
            "description",
            "family",
            "match.target",
            "match.value",
            "rewrite"
          ])
          const details = (response.body as { error: { details: Array<{ path: string; message: string }> } }).error
            .details
          expect(details.find((detail) => detail.path === "match.value")!.message).toMatch(/^Unsupported regex: invalid perl operator/)
          expectError(yield* call(base, "GET", "/v1/policies/p1", { token: owner.jwt }), 404, "policy_not_found")
          expect(yield* listPolicies(base, owner.jwt)).toEqual([])
        })
    )

    it.effect("each kind of problem names its own path: match.type, rewrite, match.value (a regex RE2 cannot run), id", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const post = (text: string, contentType = YAML) =>
          sendText(base, owner.jwt, "POST", "/v1/policies", text, contentType)
        const badType = yield* post(policyYaml("bad-type").replace("type: literal", "type: glob"))
        expectValidation(badType, "match.type")
        expect(detailPaths(badType)).toEqual(["match.type"])

        const noRewrite = yield* post(policyYaml("no-rewrite").replace("action: deny", "action: rewrite"))
        expectValidation(noRewrite, "rewrite")
        expect(detailPaths(noRewrite)).toEqual(["rewrite"])

        const unsafe = {
          ...JSON_DOCUMENT,
          id: "unsafe-regex",
          match: { type: "regex", value: "(['\"]).*\\1", target: "content" }
        }
        const unsafeResponse = yield* post(JSON.stringify(unsafe), JSON_TYPE)
        expectValidation(unsafeResponse, "match.value")
        expect(detailPaths(unsafeResponse)).toEqual(["match.value"])

        expectValidation(yield* post(policyYaml("Bad-Id!")), "id")
        expectValidation(yield* post(policyYaml("x").replace("severity: high", "severity: extreme")), "severity")
        expectValidation(
          yield* post(policyYaml("x").replace("  target: content", "  target: headers.x")),
          "match.target"
        )
        expect(yield* listPolicies(base, owner.jwt)).toEqual([])
      })
    )

    it.effect("syntax errors, an empty body and invalid UTF-8 are 400 with the empty path; text/plain is 415", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const syntax = yield* sendText(
          base,
          owner.jwt,
          "POST",
          "/v1/policies",
          "id: a\ndescription: d\nfamily: content\n  severity: low\n"
        )
        const error = expectValidation(syntax, "")
        expect(error.message).toContain("line 3, column 9")
        expectValidation(yield* sendText(base, owner.jwt, "POST", "/v1/policies", ""), "")
        expectValidation(yield* sendText(base, owner.jwt, "POST", "/v1/policies", "[1, 2]", JSON_TYPE), "")
        const invalidUtf8 = yield* request(`${base}/v1/policies`, {
          method: "POST",
          headers: { authorization: `Bearer ${owner.jwt}`, "content-type": YAML },
          body: new Uint8Array([0x69, 0x64, 0x3a, 0x20, 0xc3, 0x28, 0x0a]),
          signal: AbortSignal.timeout(15_000)
        })
        expectValidation(invalidUtf8, "")
        expectError(
          yield* sendText(base, owner.jwt, "POST", "/v1/policies", policyYaml("plain"), "text/plain"),
          415,
          "unsupported_media_type"
        )
        expect(yield* listPolicies(base, owner.jwt)).toEqual([])
      })
    )

    it.effect("a text the database cannot store (NUL, lone surrogate) is 400, never 500", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const cases: ReadonlyArray<readonly [string, string]> = [
          [policyYaml("nul-escape", { description: '"a\\0b"' }), YAML],
          [policyYaml("surrogate-escape", { description: '"a\\uD800b"' }), YAML],
          [policyYaml("raw-nul", { description: '"a\u0000b"' }), YAML],
          [policyYaml("nul-in-value", { value: '"full\\0refund"' }), YAML],
          [JSON.stringify({ ...JSON_DOCUMENT, id: "json-nul", description: "a\u0000b" }), JSON_TYPE]
        ]
        for (const [text, contentType] of cases) {
          const response = yield* sendText(base, owner.jwt, "POST", "/v1/policies", text, contentType)
          expect(response.status, `${JSON.stringify(text)}: ${response.text}`).toBe(400)
          expectError(response, 400)
          // validate reports the same document as invalid, never 500.
          const checked = yield* sendText(base, owner.jwt, "POST", "/v1/policies/validate", text, contentType)
          expect(checked.status, checked.text).toBe(200)
          expect((checked.body as { valid: boolean }).valid, checked.text).toBe(false)
        }
        expect(yield* listPolicies(base, owner.jwt)).toEqual([])
      })
    )

    it.effect("ids that collide with the collection's own routes (schema, batch) are refused with 400 at id", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        // GET /v1/policies/schema serves the JSON Schema and PATCH /v1/policies/batch/enabled the batch:
        // a policy with such an id could never be read or toggled through its by-id routes.
        for (const id of ["schema", "batch"]) {
          const response = yield* sendText(base, owner.jwt, "POST", "/v1/policies", policyYaml(id))
          expectValidation(response, "id")
        }
      })
    )
  })

  describe("validate", () => {
    it.effect("a valid document: 200 {valid: true, policy_id, errors: []}; nothing is created", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const yaml = expectStatus(
          yield* sendText(base, owner.jwt, "POST", "/v1/policies/validate", policyYaml("only-checked")),
          200
        )
        expect(yaml).toEqual({ valid: true, policy_id: "only-checked", errors: [] })
        const json = expectStatus(
          yield* sendText(base, owner.jwt, "POST", "/v1/policies/validate", JSON.stringify(JSON_DOCUMENT), JSON_TYPE),
          200
        )
        expect(json).toEqual({ valid: true, policy_id: "mask-card-numbers", errors: [] })
        expect(yield* listPolicies(base, owner.jwt)).toEqual([])
      })
    )

    it.effect("an invalid document: 200 {valid: false, errors: [{path, message}]} with every problem", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const result = expectStatus(
          yield* sendText(base, owner.jwt, "POST", "/v1/policies/validate", FIVE_PROBLEMS),
          200
        ) as { valid: boolean; policy_id: string | null; errors: Array<{ path: string; message: string }> }
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
        const created = yield* sendText(base, owner.jwt, "POST", "/v1/policies", FIVE_PROBLEMS)
        const error = expectValidation(created, "rewrite")
        expect(error.details).toEqual(result.errors)
      })
    )

    it.effect(
      "YAML syntax errors give line and column in the message; empty and non-mapping documents are invalid",
      () =>
        Effect.gen(function* () {
          const base = yield* baseUrl
          const owner = yield* tenant(base)
          const validate = (text: string, contentType = YAML) =>
            Effect.map(
              sendText(base, owner.jwt, "POST", "/v1/policies/validate", text, contentType),
              (response) =>
                expectStatus(response, 200) as { valid: boolean; errors: Array<{ path: string; message: string }> }
            )
          const syntax = yield* validate("id: a\ndescription: d\nfamily: content\n  severity: low\n")
          expect(syntax.valid).toBe(false)
          expect(syntax.errors[0]).toEqual({
            path: "",
            message: "YAML syntax error at line 3, column 9: Nested mappings are not allowed in compact mappings"
          })
          const duplicate = yield* validate("id: a\nid: b\n")
          expect(duplicate.errors[0]!.message).toMatch(/^YAML syntax error at line 2, column 1: .*unique/)
          const json = yield* validate('{\n  "id": "a"\n  "description": "d"\n}', JSON_TYPE)
          expect(json.valid).toBe(false)
          expect(json.errors[0]!.message).toMatch(/^YAML syntax error at line \d+, column \d+: /)
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
        expect(expectStatus(yield* call(base, "GET", "/v1/policies", { token: owner.jwt }), 200)).toEqual({
          policies: []
        })
        yield* createPolicy(base, owner.jwt, policyYaml("older"))
        yield* Effect.sleep("5 millis")
        yield* createPolicy(base, owner.jwt, policyYaml("newer", { owner: "some-bot", enabled: false }))
        const listed = yield* listPolicies(base, owner.jwt)
        expect(listed.map((policy) => policy.id)).toEqual(["newer", "older"])
        for (const policy of listed) expect(sortedKeys(policy)).toEqual(SUMMARY_KEYS)
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
        expectError(
          yield* call(base, "GET", "/v1/policies/never-created", { token: owner.jwt }),
          404,
          "policy_not_found"
        )
      })
    )

    it.effect("DELETE answers 204 with an empty body, then GET and DELETE are 404", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        yield* createPolicy(base, owner.jwt, policyYaml("short-lived"))
        yield* createPolicy(base, owner.jwt, policyYaml("survivor"))
        const deleted = yield* call(base, "DELETE", "/v1/policies/short-lived", { token: owner.jwt })
        expect(deleted.status, deleted.text).toBe(204)
        expect(deleted.text).toBe("")
        expectError(yield* call(base, "GET", "/v1/policies/short-lived", { token: owner.jwt }), 404, "policy_not_found")
        expectError(
          yield* call(base, "DELETE", "/v1/policies/short-lived", { token: owner.jwt }),
          404,
          "policy_not_found"
        )
        expect(ids(yield* listPolicies(base, owner.jwt))).toEqual(["survivor"])
        // The id is free again.
        yield* createPolicy(base, owner.jwt, policyYaml("short-lived"))
      })
    )
  })

  describe("enable and disable", () => {
    it.effect("PATCH /{id}/enabled flips enabled, answers PolicyDetail, and leaves source_yaml untouched", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const created = yield* createPolicy(base, owner.jwt, policyYaml("toggled"))
        const off = yield* setEnabled(base, owner.jwt, "toggled", false)
        expect(off).toEqual({ ...created, enabled: false })
        expect(yield* getPolicy(base, owner.jwt, "toggled")).toEqual(off)
        const offAgain = yield* setEnabled(base, owner.jwt, "toggled", false)
        expect(offAgain.enabled).toBe(false)
        const on = yield* setEnabled(base, owner.jwt, "toggled", true)
        expect(on).toEqual(created)
      })
    )

    it.effect("PATCH /{id}/enabled: unknown id is 404; a body without a boolean is 400", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        yield* createPolicy(base, owner.jwt, policyYaml("patch-target"))
        expectError(
          yield* call(base, "PATCH", "/v1/policies/nobody-here/enabled", { token: owner.jwt, body: { enabled: true } }),
          404,
          "policy_not_found"
        )
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
        expect((yield* getPolicy(base, owner.jwt, "patch-target")).enabled).toBe(true)
      })
    )

    it.effect("PATCH /batch/enabled changes every listed policy and answers their summaries", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        for (const id of ["b1", "b2", "b3"]) yield* createPolicy(base, owner.jwt, policyYaml(id, { enabled: false }))
        const response = yield* call(base, "PATCH", "/v1/policies/batch/enabled", {
          token: owner.jwt,
          body: { enabled: true, ids: ["b1", "b2", "b1"] }
        })
        const { policies } = expectStatus(response, 200) as { policies: Array<PolicySummaryBody> }
        expect(ids(policies)).toEqual(["b1", "b2"])
        for (const policy of policies) {
          expect(sortedKeys(policy)).toEqual(SUMMARY_KEYS)
          expect(policy.enabled).toBe(true)
        }
        expect((yield* getPolicy(base, owner.jwt, "b1")).enabled).toBe(true)
        expect((yield* getPolicy(base, owner.jwt, "b2")).enabled).toBe(true)
        expect((yield* getPolicy(base, owner.jwt, "b3")).enabled).toBe(false)
      })
    )

    it.effect("PATCH /batch/enabled is all-or-nothing: an unknown id is 404 and nothing changes", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        yield* createPolicy(base, owner.jwt, policyYaml("keep-on"))
        yield* createPolicy(base, owner.jwt, policyYaml("keep-off", { enabled: false }))
        for (const enabled of [false, true]) {
          const response = yield* call(base, "PATCH", "/v1/policies/batch/enabled", {
            token: owner.jwt,
            body: { enabled, ids: ["keep-on", "keep-off", "does-not-exist"] }
          })
          const error = expectError(response, 404, "policy_not_found")
          expect(error.message).toContain("does-not-exist")
          expect(error.message).not.toContain("keep-on")
          expect((yield* getPolicy(base, owner.jwt, "keep-on")).enabled).toBe(true)
          expect((yield* getPolicy(base, owner.jwt, "keep-off")).enabled).toBe(false)
        }
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
        expect((yield* getPolicy(base, owner.jwt, "keep-off")).enabled).toBe(false)
      })
    )
  })

  describe("schema and draft", () => {
    it.effect("GET /v1/policies/schema is a draft-07 JSON Schema whose properties include id, match and action", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const response = yield* call(base, "GET", "/v1/policies/schema", { token: owner.jwt })
        const schema = expectStatus(response, 200) as Record<string, unknown>
        expect(response.headers.get("content-type")).toContain("application/json")
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
        const document = resolve(schema)
        expect(document["type"]).toBe("object")
        const properties = document["properties"] as Record<string, Record<string, unknown>>
        expect(Object.keys(properties)).toEqual(
          expect.arrayContaining(["id", "description", "family", "severity", "action", "match", "enabled", "rewrite"])
        )
        expect(document["required"]).toEqual(expect.arrayContaining(["id", "match", "action"]))
        expect(resolve(properties["action"]!)["enum"]).toEqual(["permit", "deny", "defer", "rewrite"])
        const match = resolve(properties["match"]!)
        expect(Object.keys(match["properties"] as object)).toEqual(
          expect.arrayContaining(["type", "value", "target", "case_sensitive"])
        )
      })
    )

    it.effect("POST /v1/policies/draft turns 'never promise a refund' into a deny draft", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const response = yield* call(base, "POST", "/v1/policies/draft", {
          token: owner.jwt,
          body: { prompt: "never promise a refund" }
        })
        const { draft } = expectStatus(response, 200) as { draft: Record<string, unknown> }
        expect(sortedKeys(draft)).toEqual(
          ["action", "description", "id", "match_type", "match_value", "rewrite", "severity"].sort()
        )
        expect(draft["action"]).toBe("deny")
        expect(draft["id"]).toMatch(/^[a-z0-9][a-z0-9_.-]{0,127}$/)
        expect(String(draft["match_value"]).toLowerCase()).toContain("refund")
        expect(["literal", "regex", "any_of"]).toContain(draft["match_type"])
        // Nothing is created by drafting.
        expect(yield* listPolicies(base, owner.jwt)).toEqual([])
      })
    )

    it.effect("a prompt the drafter cannot read is 422 draft_not_understood listing example phrasings", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const response = yield* call(base, "POST", "/v1/policies/draft", {
          token: owner.jwt,
          body: { prompt: "qwzx blorp fnord zzzt" }
        })
        const error = expectError(response, 422, "draft_not_understood")
        expect(error.message).toContain("Never promise a refund")
        expect(error.message.split('"').length).toBeGreaterThan(4)
      })
    )

    it.effect("a missing, empty or non-string prompt is 400 at prompt; a non-JSON body is 400 or 415", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
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
