/**
 * What a workspace stores as knowledge is bounded: at most
 * MAX_KNOWLEDGE_SOURCES_PER_WORKSPACE sources and
 * MAX_KNOWLEDGE_BYTES_PER_WORKSPACE bytes of files (both set low here).
 * Past either, a create is 409 knowledge_limit_reached naming both settings,
 * concurrent uploads cannot slip past together, `DELETE
 * /v1/knowledge-sources/{id}` makes room, and other workspaces are not
 * affected. Before, uploads of 10 MiB files had no end.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { KnowledgeSourceId } from "../../src/catalog/Domain.js"
import { expectFailure } from "../support/Api.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"

const LIMITS = { MAX_KNOWLEDGE_SOURCES_PER_WORKSPACE: "3", MAX_KNOWLEDGE_BYTES_PER_WORKSPACE: "1000" }

type Api = Effect.Effect.Success<ReturnType<typeof tenant>>["api"]

const fileSource = (api: Api, title: string, bytes: number) =>
  api.knowledgeSources.createKnowledgeSource({
    payload: {
      kind: "file",
      title,
      file_name: `${title}.txt`,
      media_type: "text/plain",
      data_base64: Buffer.alloc(bytes, "k").toString("base64")
    }
  })

const urlSource = (api: Api, title: string) =>
  api.knowledgeSources.createKnowledgeSource({ payload: { kind: "url", title, location: "https://example.com/faq" } })

layer(testServer("database", LIMITS), SERVER_OPTIONS)("knowledge storage limits", (it) => {
  it.effect("a 4th source of 3 is 409 knowledge_limit_reached, even when sent at once; a delete makes room", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const other = yield* tenant(base)
      const outcomes = yield* Effect.forEach(
        ["a", "b", "c", "d"],
        (title) => Effect.either(urlSource(owner.api, title)),
        { concurrency: "unbounded" }
      )
      expect(outcomes.filter((outcome) => outcome._tag === "Right")).toHaveLength(3)
      const refused = yield* expectFailure(urlSource(owner.api, "e"), 409, "knowledge_limit_reached")
      expect(refused.message).toMatch(/MAX_KNOWLEDGE_SOURCES_PER_WORKSPACE/)
      yield* urlSource(other.api, "a")

      const { knowledge_sources } = yield* owner.api.knowledgeSources.listKnowledgeSources({ urlParams: {} })
      expect(knowledge_sources).toHaveLength(3)
      const gone = knowledge_sources[0]!
      yield* owner.api.knowledgeSources.deleteKnowledgeSource({ path: { id: gone.id } })
      yield* expectFailure(
        owner.api.knowledgeSources.deleteKnowledgeSource({ path: { id: gone.id } }),
        404,
        "knowledge_source_not_found"
      )
      // Another workspace's source is not found from here.
      const foreign = yield* other.api.knowledgeSources.listKnowledgeSources({ urlParams: {} })
      yield* expectFailure(
        owner.api.knowledgeSources.deleteKnowledgeSource({
          path: { id: KnowledgeSourceId.make(foreign.knowledge_sources[0]!.id) }
        }),
        404,
        "knowledge_source_not_found"
      )
      yield* urlSource(owner.api, "after-a-delete")
    })
  )

  it.effect("files past 1000 bytes in all are 409 knowledge_limit_reached; deleting a file makes room", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const first = yield* fileSource(owner.api, "first", 600)
      const refused = yield* expectFailure(fileSource(owner.api, "second", 401), 409, "knowledge_limit_reached")
      expect(refused.message).toMatch(/MAX_KNOWLEDGE_BYTES_PER_WORKSPACE/)
      yield* fileSource(owner.api, "fits", 400)
      yield* expectFailure(fileSource(owner.api, "one more byte", 1), 409, "knowledge_limit_reached")
      yield* owner.api.knowledgeSources.deleteKnowledgeSource({ path: { id: first.id } })
      yield* expectFailure(
        owner.api.knowledgeSources.getKnowledgeSourceFile({ path: { id: first.id } }),
        404,
        "knowledge_source_not_found"
      )
      yield* fileSource(owner.api, "second", 600)
    })
  )
})
