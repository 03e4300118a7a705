/**
 * Label policies, tool metadata and knowledge sources over HTTP against the
 * real service and PostgreSQL: upserts, reads, deletes, validation (400 with
 * paths), and knowledge-source files up to 10 MiB decoded (the endpoint's
 * body limit is 14 MiB).
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { createHash, randomBytes } from "node:crypto"
import { type KnowledgeSource, KnowledgeSourceId } from "../../src/catalog/Domain.js"
import { TIMESTAMP } from "../support/Formats.js"
import { expectFailure, expectInvalid, keysOf, withRaw } from "../support/Api.js"
import { call, expectError, expectValidation, isErrorBody } from "../support/Raw.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import { fieldOf, rowsOf } from "./catalog-helpers.js"

const MiB = 1024 * 1024

const KNOWLEDGE_SOURCE_KEYS = [
  "created_at",
  "id",
  "kind",
  "last_indexed_at",
  "location",
  "metadata",
  "status",
  "title",
  "updated_at"
].sort()

const sha256 = (data: Uint8Array) => createHash("sha256").update(data).digest("hex")

/** Compares big payloads without printing megabytes on failure. */
const expectSameBytes = (actualBase64: string, expected: Buffer) => {
  const actual = Buffer.from(actualBase64, "base64")
  expect(actual.length).toBe(expected.length)
  expect(sha256(actual)).toBe(sha256(expected))
  expect(actualBase64.length).toBe(expected.toString("base64").length)
  expect(actualBase64 === expected.toString("base64")).toBe(true)
}

const sourcePath = (id: string) => ({ id: KnowledgeSourceId.make(id) })

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

  describe("knowledge sources", () => {
    it.effect("a url source's location, when given, is an absolute URL; it starts as draft and has no file", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const { api } = yield* tenant(base)
        const answer = yield* withRaw(
          api.knowledgeSources.createKnowledgeSource({
            payload: {
              kind: "url",
              title: "Public FAQ",
              location: "https://example.com/faq",
              metadata: { team: "support" }
            },
            withResponse: true
          })
        )
        const source = answer.value
        expect(keysOf(answer.body)).toEqual(KNOWLEDGE_SOURCE_KEYS)
        expect(source).toMatchObject({
          kind: "url",
          title: "Public FAQ",
          location: "https://example.com/faq",
          status: "draft",
          metadata: { team: "support" },
          last_indexed_at: null
        })
        expect(source.created_at).toMatch(TIMESTAMP)
        expect(source.updated_at).toMatch(TIMESTAMP)
        expect(typeof source.id).toBe("string")
        yield* expectFailure(
          api.knowledgeSources.getKnowledgeSourceFile({ path: { id: source.id } }),
          404,
          "knowledge_source_has_no_file"
        )
        for (const location of ["", "example.com/faq", "/faq", "not a url"]) {
          yield* expectInvalid(
            api.knowledgeSources.createKnowledgeSource({ payload: { kind: "url", title: "Bad", location } }),
            "location"
          )
        }
      })
    )

    it.effect("a text source needs text; its file is the text as UTF-8", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const { api } = yield* tenant(base)
        yield* expectInvalid(
          api.knowledgeSources.createKnowledgeSource({ payload: { kind: "text", title: "Empty" } }),
          "text"
        )
        yield* expectInvalid(
          api.knowledgeSources.createKnowledgeSource({ payload: { kind: "text", title: "Empty", text: "" } }),
          "text"
        )
        const text = "Refunds take 5–7 business days. Rückerstattung. 退款"
        const source = yield* api.knowledgeSources.createKnowledgeSource({
          payload: { kind: "text", title: "Refunds", text }
        })
        expect(source).toMatchObject({ kind: "text", title: "Refunds", status: "draft" })
        const file = yield* api.knowledgeSources.getKnowledgeSourceFile({ path: { id: source.id } })
        expect(Buffer.from(file.data_base64, "base64").toString("utf8")).toBe(text)
        expect(file.byte_size).toBe(Buffer.byteLength(text, "utf8"))
        expect(file.media_type).toContain("text/plain")
      })
    )

    it.effect("a file source round-trips: GET /{id}/file answers what was sent", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const { api } = yield* tenant(base)
        const data = Buffer.from(Array.from({ length: 1024 }, (_, i) => i % 256))
        const sent = {
          file_name: "policy handbook.pdf",
          media_type: "application/pdf",
          data_base64: data.toString("base64")
        }
        const source = yield* api.knowledgeSources.createKnowledgeSource({
          payload: { kind: "file", title: "Handbook", ...sent }
        })
        expect(source).toMatchObject({ kind: "file", title: "Handbook", status: "draft" })
        const file = yield* api.knowledgeSources.getKnowledgeSourceFile({ path: { id: source.id } })
        expect(file).toEqual({ ...sent, byte_size: data.length })
      })
    )

    it.effect(
      "a file source needs data_base64 (valid base64), file_name and media_type; kind and title are checked",
      () =>
        Effect.gen(function* () {
          const base = yield* baseUrl
          const owner = yield* tenant(base)
          const { api } = owner
          const complete = {
            kind: "file",
            title: "F",
            file_name: "a.txt",
            media_type: "text/plain",
            data_base64: "aGk="
          } as const
          const { data_base64: _data, ...withoutData } = complete
          const { file_name: _name, ...withoutName } = complete
          const { media_type: _type, ...withoutType } = complete
          const create = api.knowledgeSources.createKnowledgeSource
          yield* expectInvalid(create({ payload: withoutData }), "data_base64")
          yield* expectInvalid(create({ payload: withoutName }), "file_name")
          yield* expectInvalid(create({ payload: withoutType }), "media_type")
          yield* expectInvalid(create({ payload: { ...complete, data_base64: "!!not base64!!" } }), "data_base64")
          // Raw: bodies the contract's schema refuses (no title, no kind, an unknown kind, an empty title).
          const without = (key: string) => Object.fromEntries(Object.entries(complete).filter(([k]) => k !== key))
          const token = owner.jwt
          for (const key of ["title", "kind"]) {
            expectValidation(yield* call(base, "POST", "/v1/knowledge-sources", { token, body: without(key) }), key)
          }
          expectValidation(
            yield* call(base, "POST", "/v1/knowledge-sources", { token, body: { ...complete, kind: "pdf" } }),
            "kind"
          )
          expectValidation(
            yield* call(base, "POST", "/v1/knowledge-sources", { token, body: { ...complete, title: "" } }),
            "title"
          )
          const { knowledge_sources } = yield* api.knowledgeSources.listKnowledgeSources()
          expect(knowledge_sources).toEqual([])
        })
    )

    it.effect("GET /v1/knowledge-sources lists every source (newest first, no file data); unknown id file is 404", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const { api } = yield* tenant(base)
        const created: Array<KnowledgeSource> = []
        for (const payload of [
          { kind: "url", title: "One", location: "https://example.com/1" },
          { kind: "text", title: "Two", text: "two" },
          {
            kind: "file",
            title: "Three",
            file_name: "3.bin",
            media_type: "application/octet-stream",
            data_base64: "AAEC"
          }
        ] as const) {
          created.push(yield* api.knowledgeSources.createKnowledgeSource({ payload }))
          yield* Effect.sleep("5 millis")
        }
        const listed = yield* withRaw(api.knowledgeSources.listKnowledgeSources({ withResponse: true }))
        expect(listed.value.knowledge_sources).toEqual([...created].reverse())
        for (const source of rowsOf(listed.body, "knowledge_sources")) {
          expect(keysOf(source)).toEqual(KNOWLEDGE_SOURCE_KEYS)
        }
        yield* expectFailure(
          api.knowledgeSources.getKnowledgeSourceFile({ path: sourcePath("ks_doesnotexist") }),
          404,
          "knowledge_source_not_found"
        )
      })
    )

    it.effect("a ~9 MiB file is accepted and read back intact; exactly 10 MiB is the decoded limit", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const { api } = yield* tenant(base)
        const nine = randomBytes(9 * MiB)
        const source = yield* api.knowledgeSources.createKnowledgeSource({
          payload: {
            kind: "file",
            title: "Nine",
            file_name: "nine.bin",
            media_type: "application/octet-stream",
            data_base64: nine.toString("base64")
          }
        })
        const file = yield* api.knowledgeSources.getKnowledgeSourceFile({ path: { id: source.id } })
        expect(file.file_name).toBe("nine.bin")
        expect(file.media_type).toBe("application/octet-stream")
        expect(file.byte_size).toBe(9 * MiB)
        expectSameBytes(file.data_base64, nine)

        const ten = randomBytes(10 * MiB)
        const tenSource = yield* api.knowledgeSources.createKnowledgeSource({
          payload: {
            kind: "file",
            title: "Ten",
            file_name: "ten.bin",
            media_type: "application/octet-stream",
            data_base64: ten.toString("base64")
          }
        })
        const tenFile = yield* api.knowledgeSources.getKnowledgeSourceFile({ path: { id: tenSource.id } })
        expect(tenFile.byte_size).toBe(10 * MiB)
        expectSameBytes(tenFile.data_base64, ten)
      })
    )

    it.effect("a file over 10 MiB decoded is refused with the error body (400 under the body limit, 413 over it)", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const token = owner.jwt
        const body = (data: Buffer) => ({
          kind: "file" as const,
          title: "Too big",
          file_name: "big.bin",
          media_type: "application/octet-stream",
          data_base64: data.toString("base64")
        })
        // One byte over: the base64 still fits in the 14 MiB body, so the handler refuses it.
        yield* expectInvalid(
          owner.api.knowledgeSources.createKnowledgeSource({ payload: body(randomBytes(10 * MiB + 1)) }),
          "data_base64"
        )
        // Raw: oversized bodies, beyond what the contract's schema lets the client send.
        // 11 MiB: about 14.7 MiB of base64, over the endpoint's body limit.
        const eleven = yield* call(base, "POST", "/v1/knowledge-sources", { token, body: body(randomBytes(11 * MiB)) })
        expect([400, 413], eleven.text).toContain(eleven.status)
        expect(isErrorBody(eleven.body), eleven.text.slice(0, 500)).toBe(true)
        if (eleven.status === 400) expectValidation(eleven, "data_base64")
        else expectError(eleven, 413, "payload_too_large")
        expect(yield* owner.api.knowledgeSources.listKnowledgeSources()).toEqual({ knowledge_sources: [] })
        // The raised limit is this endpoint's only: another JSON endpoint still refuses 2 MiB.
        const elsewhere = yield* call(base, "POST", "/v1/label-policies", {
          token,
          body: { origin: "big", trust: "x".repeat(2 * MiB) }
        })
        expectError(elsewhere, 413, "payload_too_large")
      })
    )
  })
})
