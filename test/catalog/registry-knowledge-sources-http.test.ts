/**
 * Knowledge sources over HTTP against the real service and PostgreSQL: url,
 * text and file sources, reads, lists, validation (400 with paths), and
 * files up to 10 MiB decoded (the endpoint's body limit is 14 MiB). Label
 * policies and tool metadata are in registry-labels-tools-http.test.ts.
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
import { rowsOf } from "./catalog-helpers.js"

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

    it.effect("a location is checked by the outbound guard whatever the kind: never an internal address", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const { api } = yield* tenant(base)
        const file = { file_name: "a.txt", media_type: "text/plain", data_base64: "aGk=" }
        for (const location of [
          "http://169.254.169.254/latest/meta-data",
          "https://127.0.0.1/admin",
          "https://user:pw@example.com/"
        ]) {
          for (const payload of [
            { kind: "url", title: "U", location },
            { kind: "text", title: "T", text: "t", location },
            { kind: "file", title: "F", ...file, location }
          ] as const) {
            yield* expectInvalid(api.knowledgeSources.createKnowledgeSource({ payload }), "location")
          }
        }
        expect((yield* api.knowledgeSources.listKnowledgeSources({ urlParams: {} })).knowledge_sources).toEqual([])
        const kept = yield* api.knowledgeSources.createKnowledgeSource({
          payload: { kind: "text", title: "T", text: "t", location: "https://example.com/origin" }
        })
        expect(kept.location).toBe("https://example.com/origin")
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
          const { knowledge_sources } = yield* api.knowledgeSources.listKnowledgeSources({ urlParams: {} })
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
        const listed = yield* withRaw(api.knowledgeSources.listKnowledgeSources({ urlParams: {}, withResponse: true }))
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

    it.effect("metadata is at most 64 KiB of JSON: the 14 MiB body is for files, and every list carries it", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const token = owner.jwt
        // Within every per-value JSON cap (200 strings of 65,536 characters), about 13 MiB in all.
        const huge = Array.from({ length: 200 }, () => "m".repeat(65_536))
        const answer = yield* call(base, "POST", "/v1/knowledge-sources", {
          token,
          body: { kind: "text", title: "Fat", text: "t", metadata: huge }
        })
        expectValidation(answer, "metadata")
        expect(answer.text).toContain("65,536 bytes of JSON")
        // Exactly at the limit (65,536 bytes of JSON) it is stored and listed as sent.
        const atLimit = { note: "n".repeat(65_536 - JSON.stringify({ note: "" }).length) }
        expect(Buffer.byteLength(JSON.stringify(atLimit))).toBe(65_536)
        const stored = yield* owner.api.knowledgeSources.createKnowledgeSource({
          payload: { kind: "text", title: "At limit", text: "t", metadata: atLimit }
        })
        expect(stored.metadata).toEqual(atLimit)
        const { knowledge_sources } = yield* owner.api.knowledgeSources.listKnowledgeSources({ urlParams: {} })
        expect(knowledge_sources.map((source) => source.title)).toEqual(["At limit"])
        expectValidation(
          yield* call(base, "POST", "/v1/knowledge-sources", {
            token,
            body: { kind: "text", title: "Over", text: "t", metadata: { ...atLimit, x: 1 } }
          }),
          "metadata"
        )
      })
    )

    it.effect(
      "the list pages: 50 by default, at most 200, and at most 4 MiB of metadata; next_cursor reaches each once",
      () =>
        Effect.gen(function* () {
          const base = yield* baseUrl
          const owner = yield* tenant(base)
          const metadata = { note: "n".repeat(60_000) }
          const created = yield* Effect.forEach(
            Array.from({ length: 80 }, (_, index) => `Source ${index}`),
            (title) =>
              owner.api.knowledgeSources.createKnowledgeSource({
                payload: { kind: "text", title, text: "t", metadata }
              }),
            { concurrency: 4 }
          )
          const list = (query: string) =>
            call(base, "GET", `/v1/knowledge-sources${query}`, { token: owner.jwt }).pipe(
              Effect.tap((response) => expect(response.status, response.text.slice(0, 300)).toBe(200)),
              Effect.map((response) => ({
                bytes: Buffer.byteLength(response.text),
                body: response.body as { knowledge_sources: Array<KnowledgeSource>; next_cursor?: string }
              }))
            )
          const first = yield* list("")
          expect(first.body.knowledge_sources).toHaveLength(50)
          expect(typeof first.body.next_cursor).toBe("string")

          const seen: Array<KnowledgeSource> = []
          let cursor: string | undefined
          let pages = 0
          do {
            const page = yield* list(
              `?limit=1000${cursor === undefined ? "" : `&cursor=${encodeURIComponent(cursor)}`}`
            )
            expect(page.bytes).toBeLessThan(4 * MiB + 70_000)
            seen.push(...page.body.knowledge_sources)
            cursor = page.body.next_cursor
            expect(++pages).toBeLessThanOrEqual(10)
          } while (cursor !== undefined)
          // About 60 KB a source: 4 MiB holds some 70 of them, so 80 take two pages at any limit.
          expect(pages).toBe(2)
          expect(seen.map((source) => source.id).sort()).toEqual(created.map((source) => source.id).sort())
          const times = seen.map((source) => Date.parse(source.created_at))
          expect(times).toEqual([...times].sort((a, b) => b - a))

          expectValidation(yield* call(base, "GET", "/v1/knowledge-sources?limit=0", { token: owner.jwt }), "limit")
          expectValidation(
            yield* call(base, "GET", "/v1/knowledge-sources?cursor=garbage", { token: owner.jwt }),
            "cursor"
          )
          // A cursor naming no source of this workspace is an empty page.
          const stranger = yield* tenant(base)
          const foreign = yield* call(
            base,
            "GET",
            `/v1/knowledge-sources?cursor=${encodeURIComponent(first.body.next_cursor!)}`,
            {
              token: stranger.jwt
            }
          )
          expect(foreign.body).toEqual({ knowledge_sources: [] })
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
        expect(yield* owner.api.knowledgeSources.listKnowledgeSources({ urlParams: {} })).toEqual({
          knowledge_sources: []
        })
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
