/**
 * Versions of agent profiles, tool metadata and label policies, kept like
 * policy versions (migration 0022): each write records the entry it made
 * current, with who and when, in the write's transaction; the history
 * outlives a delete, so a policy set that named a version stays explainable.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { pageByVersionCut } from "../platform/Cursor.js"
import { cutAtBytes, cutPage, decodeCutRows, MAX_PAGE_BYTES } from "../platform/PageBytes.js"
import { pageSize } from "../platform/Schemas.js"
import { dieOnErrors } from "../platform/Sql.js"
import { VERSIONS_PAGE_CAP, type VersionsPageQuery, versionHeader } from "./Lifecycle.js"
import type { PolicyAuthor } from "./Repo.js"

export type VersionedResource = "agent" | "tool_metadata" | "label_policy"

const CatalogVersionRow = Schema.Struct({
  resource: Schema.Literal("agent", "tool_metadata", "label_policy"),
  key: Schema.String,
  version: Schema.Int,
  content: Schema.Unknown,
  created_by_kind: Schema.String,
  created_by_id: Schema.String,
  created_at: Schema.DateFromSelf
})
export type CatalogVersionRow = typeof CatalogVersionRow.Type

/** One resource's version, named. */
export interface VersionRef {
  readonly resource: VersionedResource
  readonly key: string
  readonly version: number
}

/**
 * A stored version as the API shows it: its header and the entry it recorded (stored exactly as the
 * API returns the resource, so the content is the entry's shape `A`).
 */
export const toVersionEntry = <A extends object>(row: CatalogVersionRow) => ({
  ...versionHeader(row),
  ...(row.content as A)
})

/**
 * One page of a versions list (policies, agents, tool metadata, label policies), newest first:
 * `fetch(below, count)` answers up to `count` versions below `below` (all when `None`), highest first,
 * cut after the one that brings the page to `MAX_PAGE_BYTES` (`cutAtBytes`: each version holds a whole
 * document, so 100 of them made one answer of up to 100 MiB); it is asked for `limit + 1`, to know
 * whether more follow. An empty page is `missing()` when the resource never had a version (past the
 * oldest version of one that has, it is an empty page).
 */
export const versionsPage = <Row extends { readonly version: number; readonly fetched: number }, A, E, R, M>(
  query: VersionsPageQuery,
  fetch: (below: Option.Option<number>, count: number) => Effect.Effect<ReadonlyArray<Row>, E, R>,
  toVersion: (row: Row) => A,
  missing: () => M
) =>
  Effect.gen(function* () {
    const limit = pageSize(query.limit, VERSIONS_PAGE_CAP)
    const { next, page } = yield* pageByVersionCut(query.cursor, (below) =>
      Effect.map(fetch(below, limit + 1), (rows) => cutPage(rows, limit))
    )
    if (page.length === 0 && (query.cursor === undefined || (yield* fetch(Option.none(), 1)).length === 0)) {
      return yield* Effect.fail(missing())
    }
    return { versions: page.map(toVersion), ...next }
  })

export class CatalogVersions extends Effect.Service<CatalogVersions>()("catalog/CatalogVersions", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const columns = sql`resource, key, version, content, created_by_kind, created_by_id, created_at`
    const decodeRows = Schema.decodeUnknown(Schema.Array(CatalogVersionRow))
    const decodeCut = decodeCutRows(CatalogVersionRow)

    const repo = dieOnErrors({
      /** Records the version a write made current (run in the write's transaction). */
      record: (workspaceId: string, ref: VersionRef, content: unknown, author: PolicyAuthor) =>
        sql`insert into catalog_versions (workspace_id, resource, key, version, content, created_by_kind, created_by_id)
            values (${workspaceId}, ${ref.resource}, ${ref.key}, ${ref.version}, ${JSON.stringify(content)},
                    ${author.kind}, ${author.id})
            on conflict do nothing`,
      /** Up to `count` versions below `below`, newest first; a deleted resource's versions stay. */
      list: (
        workspaceId: string,
        resource: VersionedResource,
        key: string,
        below: Option.Option<number>,
        count: number
      ) =>
        cutAtBytes(
          sql,
          sql`select ${columns} from catalog_versions
              where workspace_id = ${workspaceId} and resource = ${resource} and key = ${key}
                ${Option.match(below, { onNone: () => sql``, onSome: (version) => sql`and version < ${version}` })}
              order by version desc limit ${count}`,
          sql`version desc`,
          sql`octet_length(content::text)`,
          MAX_PAGE_BYTES
        ).pipe(Effect.flatMap(decodeCut)),
      /** The named versions that exist (in no particular order). */
      find: (workspaceId: string, refs: ReadonlyArray<VersionRef>) =>
        refs.length === 0
          ? Effect.succeed([])
          : sql`select ${columns} from catalog_versions
                where workspace_id = ${workspaceId} and (resource, key, version) in
                  (select resource, key, version
                   from jsonb_to_recordset(${JSON.stringify(refs)}::jsonb) as r(resource text, key text, version int))`.pipe(
              Effect.flatMap(decodeRows)
            )
    })

    /** `GET .../versions`: a page of versions, newest first; `missing` when the key never existed here. */
    const versions = <A extends object, E>(
      workspaceId: string,
      resource: VersionedResource,
      key: string,
      query: VersionsPageQuery,
      missing: () => E
    ) =>
      versionsPage(
        query,
        (below, count) => repo.list(workspaceId, resource, key, below, count),
        (row) => toVersionEntry<A>(row),
        missing
      )

    return { record: repo.record, find: repo.find, versions }
  })
}) {}
