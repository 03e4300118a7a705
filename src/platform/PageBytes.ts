/**
 * Lists whose rows carry client JSON (trace payloads, run event metadata)
 * end a page early once it holds `MAX_PAGE_BYTES` of it: each row may hold
 * up to a request body, so 200 of them could make one answer of hundreds of
 * MiB, read, decoded and encoded while every other request waits. The sizes
 * are summed in the database, so rows past the budget are neither sent nor
 * decoded.
 */
import type { SqlClient, Statement } from "@effect/sql"
import { Schema } from "effect"

/** The most row JSON (bytes) one page carries: past it the page ends early with its cursor. */
export const MAX_PAGE_BYTES = 4 * 1024 * 1024

/** What `cutAtBytes` adds to each row. */
export const CutColumns = Schema.Struct({ fetched: Schema.Number })

/** Decodes `cutAtBytes` rows of `row`'s columns. */
export const decodeCutRows = <Fields extends Schema.Struct.Fields>(row: Schema.Struct<Fields>) =>
  Schema.decodeUnknown(Schema.Array(Schema.Struct({ ...row.fields, ...CutColumns.fields })))

/**
 * The rows of `candidates` (a query with its own order and limit) in the order `order`, cut after the
 * row whose `size` brings the page to `maxBytes` (the first row always stays); each row carries
 * `fetched`, how many rows `candidates` gave, so a caller tells a cut page from the list's end.
 * `order` and `size` name the candidates' columns unqualified.
 */
export const cutAtBytes = (
  sql: SqlClient.SqlClient,
  candidates: Statement.Fragment,
  order: Statement.Fragment,
  size: Statement.Fragment,
  maxBytes: number
) =>
  sql`with candidates as (${candidates}), sized as (
        select c.*, coalesce(sum(${size}) over (order by ${order}
                 rows between unbounded preceding and 1 preceding), 0) as bytes_before
        from candidates c)
      select s.*, (select count(*) from sized)::int as fetched from sized s
      where s.bytes_before < ${maxBytes} order by ${order}`

/**
 * A page of at most `limit` rows from `cutAtBytes` over `limit + 1` candidates; `more` when rows of the
 * list follow it (the candidates held more, or the budget cut it).
 */
export const cutPage = <Row extends { readonly fetched: number }>(rows: ReadonlyArray<Row>, limit: number) => {
  const page = rows.slice(0, limit)
  return { rows: page, more: (rows[0]?.fetched ?? 0) > page.length }
}

/** Whether `cutAtBytes` left out rows of its candidates. */
export const wasCut = (rows: ReadonlyArray<{ readonly fetched: number }>) => (rows[0]?.fetched ?? 0) > rows.length
