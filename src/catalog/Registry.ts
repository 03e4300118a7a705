/**
 * Label policies (by snake_case origin), tool metadata (by tool name) and
 * knowledge sources of a workspace. Label policies and tool metadata feed
 * the hot-path snapshot, so their writes go through ConfigChanges.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { BadRequest, NotFound } from "../http/Errors.js"
import { AppConfig } from "../platform/Config.js"
import { prefixedId } from "../platform/Ids.js"
import { OutboundGuard } from "../platform/OutboundGuard.js"
import { pageByRowCut } from "../platform/Cursor.js"
import { MAX_PAGE_BYTES } from "../platform/PageBytes.js"
import { pageSize, toTimestamp, toTimestampOrNull } from "../platform/Schemas.js"
import { capReached, storeWithinCapOrRefuse } from "../platform/WorkspaceCaps.js"
import { CatalogVersions, type VersionedResource } from "./CatalogVersions.js"
import type { VersionsPageQuery } from "./Lifecycle.js"
import { ConfigChanges } from "./ConfigChanges.js"
import { KNOWLEDGE_PAGE_CAP, KnowledgeSourceId, type KnowledgeSourcesPageQuery } from "./Domain.js"
import {
  CatalogRepo,
  type KnowledgeSourceRow,
  type LabelPolicyRow,
  type PolicyAuthor,
  type ToolMetadataRow
} from "./Repo.js"

const MAX_FILE_BYTES = 10 * 1024 * 1024

const orNull = (value: unknown) => (value === undefined ? null : value)

export const toLabelPolicy = (row: LabelPolicyRow) => ({
  enabled: row.enabled,
  policy: {
    origin: row.origin,
    confidentiality: orNull(row.confidentiality),
    integrity: orNull(row.integrity),
    trust: orNull(row.trust)
  }
})

export const toToolMetadataEntry = (row: ToolMetadataRow) => ({
  enabled: row.enabled,
  metadata: row.metadata as ToolMetadataShape
})

interface ToolMetadataShape {
  readonly tool: string
  readonly reversible: boolean
  readonly side_effect: string
}

export const toKnowledgeSource = (row: KnowledgeSourceRow) => ({
  id: KnowledgeSourceId.make(row.id),
  kind: row.kind,
  title: row.title,
  location: row.location,
  status: row.status,
  metadata: row.metadata,
  created_at: toTimestamp(row.created_at),
  updated_at: toTimestamp(row.updated_at),
  last_indexed_at: toTimestampOrNull(row.last_indexed_at)
})

const invalid = (path: string, message: string) =>
  new BadRequest({ code: "validation_failed", message: `${path}: ${message}`, details: [{ path, message }] })

const notFound = (what: string, key: string) =>
  new NotFound({ code: `${what.replaceAll(" ", "_")}_not_found`, message: `No ${what} ${key} in this workspace.` })

/** Strict base64 (standard or URL-safe alphabet, optional padding); anything else is refused. */
const decodeBase64 = (text: string) =>
  /^[A-Za-z0-9+/_-]*={0,2}$/.test(text.replace(/\s+/g, ""))
    ? Option.some(Buffer.from(text.replace(/\s+/g, ""), "base64"))
    : Option.none()

export interface NewKnowledgeSource {
  readonly kind: "url" | "file" | "text"
  readonly title: string
  readonly text?: string | undefined
  readonly location?: string | undefined
  readonly metadata?: unknown
  readonly file_name?: string | undefined
  readonly media_type?: string | undefined
  readonly data_base64?: string | undefined
}

export class Registry extends Effect.Service<Registry>()("catalog/Registry", {
  effect: Effect.gen(function* () {
    const repo = yield* CatalogRepo
    const changes = yield* ConfigChanges
    const config = yield* AppConfig
    const outbound = yield* OutboundGuard
    const history = yield* CatalogVersions
    const sql = yield* SqlClient.SqlClient
    // Every decision's snapshot holds all of a workspace's tool metadata and label policies: capped, as profiles.
    const caps = {
      tool_metadata: {
        max: config.maxToolMetadataPerWorkspace,
        code: "tool_metadata_limit_reached",
        what: "tools' metadata",
        setting: "MAX_TOOL_METADATA_PER_WORKSPACE"
      },
      label_policies: {
        max: config.maxLabelPoliciesPerWorkspace,
        code: "label_policy_limit_reached",
        what: "label policies",
        setting: "MAX_LABEL_POLICIES_PER_WORKSPACE"
      }
    } as const

    /** Upserts a versioned entry and records the version it became, as the API returns it, in one change. */
    const upsertVersioned = <Row extends { readonly version: number }, A>(
      workspaceId: string,
      target: {
        readonly resource: VersionedResource
        readonly key: string
        readonly table: "label_policies" | "tool_metadata"
        /** Whether the key is stored already (its upsert replaces it, whatever the cap). */
        readonly exists: Effect.Effect<boolean>
      },
      upsert: Effect.Effect<Row>,
      toEntry: (row: Row) => A,
      author: PolicyAuthor
    ) => {
      const withinCap = storeWithinCapOrRefuse(
        sql,
        target.table,
        workspaceId,
        caps[target.table],
        target.exists,
        upsert
      )
      return changes
        .change(
          workspaceId,
          target.table,
          Effect.tap(withinCap, (row) =>
            history.record(
              workspaceId,
              { resource: target.resource, key: target.key, version: row.version },
              toEntry(row),
              author
            )
          )
        )
        .pipe(Effect.map(toEntry))
    }

    const upsertLabelPolicy = Effect.fn("Registry.upsertLabelPolicy")(
      (
        workspaceId: string,
        input: { readonly origin: string; readonly enabled?: boolean | undefined } & Record<string, unknown>,
        author: PolicyAuthor
      ) =>
        upsertVersioned(
          workspaceId,
          {
            resource: "label_policy",
            key: input.origin,
            table: "label_policies",
            exists: Effect.map(repo.findLabelPolicy(workspaceId, input.origin), Option.isSome)
          },
          repo.upsertLabelPolicy(workspaceId, {
            origin: input.origin,
            enabled: input.enabled ?? true,
            confidentiality: orNull(input["confidentiality"]),
            integrity: orNull(input["integrity"]),
            trust: orNull(input["trust"])
          }),
          toLabelPolicy,
          author
        )
    )

    const labelPolicy = Effect.fn("Registry.labelPolicy")((workspaceId: string, origin: string) =>
      repo.findLabelPolicy(workspaceId, origin).pipe(
        Effect.flatMap(
          Option.match({
            onNone: () => Effect.fail(notFound("label policy", origin)),
            onSome: (row) => Effect.succeed(toLabelPolicy(row))
          })
        )
      )
    )

    const deleteLabelPolicy = Effect.fn("Registry.deleteLabelPolicy")((workspaceId: string, origin: string) =>
      changes
        .change(workspaceId, "label_policies", repo.deleteLabelPolicy(workspaceId, origin))
        .pipe(Effect.flatMap((deleted) => (deleted ? Effect.void : Effect.fail(notFound("label policy", origin)))))
    )

    const upsertToolMetadata = Effect.fn("Registry.upsertToolMetadata")((
      workspaceId: string,
      input: { readonly tool: string; readonly enabled?: boolean | undefined } & Record<string, unknown>,
      author: PolicyAuthor
    ) => {
      const { enabled, ...metadata } = input
      return upsertVersioned(
        workspaceId,
        {
          resource: "tool_metadata",
          key: input.tool,
          table: "tool_metadata",
          exists: Effect.map(repo.findToolMetadata(workspaceId, input.tool), Option.isSome)
        },
        repo.upsertToolMetadata(workspaceId, { tool: input.tool, enabled: enabled ?? true, metadata }),
        toToolMetadataEntry,
        author
      )
    })

    const toolMetadata = Effect.fn("Registry.toolMetadata")((workspaceId: string, tool: string) =>
      repo.findToolMetadata(workspaceId, tool).pipe(
        Effect.flatMap(
          Option.match({
            onNone: () => Effect.fail(notFound("tool", tool)),
            onSome: (row) => Effect.succeed(toToolMetadataEntry(row))
          })
        )
      )
    )

    const deleteToolMetadata = Effect.fn("Registry.deleteToolMetadata")((workspaceId: string, tool: string) =>
      changes
        .change(workspaceId, "tool_metadata", repo.deleteToolMetadata(workspaceId, tool))
        .pipe(Effect.flatMap((deleted) => (deleted ? Effect.void : Effect.fail(notFound("tool", tool)))))
    )

    /** Checks the fields each kind needs and answers the stored file, if any. */
    const sourceFile = (input: NewKnowledgeSource) =>
      Effect.gen(function* () {
        // A location given, whatever the kind, is one the service may fetch one day, so it passes the outbound
        // guard now (a file or text source's went unchecked, stored as an internal address).
        if (input.location !== undefined) yield* outbound.validateUrl(input.location, "location")
        // A url source needs only kind and title: without a location it stays a draft.
        if (input.kind === "url") return null
        if (input.kind === "text") {
          if (input.text === undefined || input.text === "") return yield* invalid("text", "a text source needs text")
          return { name: "source.txt", mediaType: "text/plain; charset=utf-8", data: Buffer.from(input.text, "utf8") }
        }
        if (input.data_base64 === undefined) return yield* invalid("data_base64", "a file source needs data_base64")
        if (input.file_name === undefined || input.file_name === "")
          return yield* invalid("file_name", "a file source needs file_name")
        if (input.media_type === undefined || input.media_type === "")
          return yield* invalid("media_type", "a file source needs media_type")
        const data = decodeBase64(input.data_base64)
        if (Option.isNone(data)) return yield* invalid("data_base64", "not valid base64")
        if (data.value.length > MAX_FILE_BYTES) {
          return yield* invalid(
            "data_base64",
            `the decoded file is ${data.value.length} bytes; the limit is ${MAX_FILE_BYTES}`
          )
        }
        return { name: input.file_name, mediaType: input.media_type, data: data.value }
      })

    const createKnowledgeSource = Effect.fn("Registry.createKnowledgeSource")(function* (
      workspaceId: string,
      input: NewKnowledgeSource
    ) {
      // Checked before the transaction opens: the location's check may wait seconds on DNS, which must not hold
      // a pooled connection idle in a transaction (test/catalog/knowledge-sources-dns-http.test.ts).
      const file = yield* sourceFile(input)
      const row = yield* changes.change(
        workspaceId,
        "knowledge_sources",
        repo.insertKnowledgeSource(
          workspaceId,
          {
            id: prefixedId("ks"),
            kind: input.kind,
            title: input.title,
            location: input.location ?? null,
            metadata: input.metadata ?? {},
            file
          },
          { sources: config.maxKnowledgeSourcesPerWorkspace, bytes: config.maxKnowledgeBytesPerWorkspace }
        )
      )
      if (Option.isNone(row)) {
        return yield* capReached(
          "knowledge_limit_reached",
          config.maxKnowledgeSourcesPerWorkspace,
          `knowledge sources and ${config.maxKnowledgeBytesPerWorkspace} bytes of knowledge files`,
          "MAX_KNOWLEDGE_SOURCES_PER_WORKSPACE, MAX_KNOWLEDGE_BYTES_PER_WORKSPACE",
          "delete sources it no longer needs (DELETE /v1/knowledge-sources/{id})"
        )
      }
      return toKnowledgeSource(row.value)
    })

    const deleteKnowledgeSource = Effect.fn("Registry.deleteKnowledgeSource")((workspaceId: string, id: string) =>
      changes
        .change(workspaceId, "knowledge_sources", repo.deleteKnowledgeSource(workspaceId, id))
        .pipe(Effect.flatMap((deleted) => (deleted ? Effect.void : Effect.fail(notFound("knowledge source", id)))))
    )

    const knowledgeSourceFile = Effect.fn("Registry.knowledgeSourceFile")((workspaceId: string, id: string) =>
      repo.findKnowledgeSourceFile(workspaceId, id).pipe(
        Effect.flatMap(
          Option.match({
            onNone: () => Effect.fail(notFound("knowledge source", id)),
            onSome: (row) =>
              row.data === null
                ? Effect.fail(
                    new NotFound({
                      code: "knowledge_source_has_no_file",
                      message: `Knowledge source ${id} has no file.`
                    })
                  )
                : Effect.succeed({
                    file_name: row.file_name ?? "",
                    media_type: row.media_type ?? "application/octet-stream",
                    byte_size: row.byte_size ?? row.data.length,
                    data_base64: Buffer.from(row.data).toString("base64")
                  })
          })
        )
      )
    )

    return {
      listLabelPolicies: Effect.fn("Registry.listLabelPolicies")((workspaceId: string) =>
        Effect.map(repo.listLabelPolicies(workspaceId), (rows) => rows.map(toLabelPolicy))
      ),
      upsertLabelPolicy,
      labelPolicy,
      /** `GET /v1/label-policies/{origin}/versions`: a page, newest first; still answers after a delete. */
      labelPolicyVersions: Effect.fn("Registry.labelPolicyVersions")(
        (workspaceId: string, origin: string, query: VersionsPageQuery) =>
          history.versions<ReturnType<typeof toLabelPolicy>, NotFound>(workspaceId, "label_policy", origin, query, () =>
            notFound("label policy", origin)
          )
      ),
      deleteLabelPolicy,
      listToolMetadata: Effect.fn("Registry.listToolMetadata")((workspaceId: string) =>
        Effect.map(repo.listToolMetadata(workspaceId), (rows) => rows.map(toToolMetadataEntry))
      ),
      upsertToolMetadata,
      toolMetadata,
      /** `GET /v1/tool-metadata/{tool}/versions`: a page, newest first; still answers after a delete. */
      toolMetadataVersions: Effect.fn("Registry.toolMetadataVersions")(
        (workspaceId: string, tool: string, query: VersionsPageQuery) =>
          history.versions<ReturnType<typeof toToolMetadataEntry>, NotFound>(
            workspaceId,
            "tool_metadata",
            tool,
            query,
            () => notFound("tool", tool)
          )
      ),
      deleteToolMetadata,
      /** `GET /v1/knowledge-sources`: a page, newest first, of `limit` sources and at most `MAX_PAGE_BYTES` of them. */
      listKnowledgeSources: Effect.fn("Registry.listKnowledgeSources")(function* (
        workspaceId: string,
        query: KnowledgeSourcesPageQuery
      ) {
        const limit = pageSize(query.limit, KNOWLEDGE_PAGE_CAP)
        const { next, page } = yield* pageByRowCut(query.cursor, (after) =>
          repo.listKnowledgeSources(workspaceId, limit, after, MAX_PAGE_BYTES)
        )
        return { knowledge_sources: page.map(toKnowledgeSource), ...next }
      }),
      createKnowledgeSource,
      knowledgeSourceFile,
      deleteKnowledgeSource
    }
  }),
  dependencies: [CatalogRepo.Default, OutboundGuard.Default, CatalogVersions.Default]
}) {}
