/** Keyset page cursors: the last row's sort key, opaque to clients. */
import { Effect, Option } from "effect"
import { BadRequest } from "../http/Errors.js"
import { isInstant } from "./Schemas.js"

export const encodeCursor = (parts: ReadonlyArray<string>) => Buffer.from(JSON.stringify(parts)).toString("base64url")

/** `None` for anything that is not a cursor of `size` strings. */
export const decodeCursor = (cursor: string, size: number): Option.Option<ReadonlyArray<string>> => {
  const parsed = Option.liftThrowable(() => JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) as unknown)()
  return Option.filter(
    parsed,
    (value): value is ReadonlyArray<string> =>
      Array.isArray(value) && value.length === size && value.every((part) => typeof part === "string")
  )
}

const RFC3339_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

/**
 * A cursor's time as the service writes it: RFC 3339 UTC with milliseconds, naming a real instant
 * (`Date.parse` alone reads `2026-02-30` or year 0, which PostgreSQL refuses).
 */
export const isCursorTime = (at: string) => RFC3339_MS.test(at) && isInstant(at)

/** A `[created_at, id]` cursor: an RFC 3339 millisecond timestamp and a non-empty id. */
export const decodeTimeCursor = (cursor: string): Option.Option<{ readonly at: string; readonly id: string }> =>
  decodeCursor(cursor, 2).pipe(
    Option.filter(([at, id]) => isCursorTime(at!) && id!.length > 0),
    Option.map(([at, id]) => ({ at: at!, id: id! }))
  )

export const encodeTimeCursor = (at: Date, id: string) => encodeCursor([at.toISOString(), id])

export const invalidCursor = new BadRequest({
  code: "validation_failed",
  message: "cursor: not a cursor from this list",
  details: [{ path: "cursor", message: "not a cursor from this list" }]
})

/** What a fetch of one page answers: its rows, and whether more rows follow them. */
export interface FetchedPage<Row> {
  readonly rows: ReadonlyArray<Row>
  readonly more: boolean
}

/**
 * One page of a keyset-paged list: decodes the cursor with `decode` (400 when it is not one of ours),
 * fetches the page past the position it names, and answers it with `next_cursor` (the page's last row, by
 * `encode`) when more rows follow.
 */
export const fetchedPageAfter = <Position, Row, E, R>(
  cursor: string | undefined,
  decode: (cursor: string) => Option.Option<Position>,
  encode: (row: Row) => string,
  fetch: (after: Option.Option<Position>) => Effect.Effect<FetchedPage<Row>, E, R>
) =>
  Effect.gen(function* () {
    const after = cursor === undefined ? Option.none() : decode(cursor)
    if (cursor !== undefined && Option.isNone(after)) return yield* invalidCursor
    const { more, rows: page } = yield* fetch(after)
    const last = page[page.length - 1]
    return { page, next: more && last !== undefined ? { next_cursor: encode(last) } : {} }
  })

/** `fetchedPageAfter` over a fetch of `limit + 1` rows: more follow when it found more than `limit`. */
const pageAfter = <Position, Row, E, R>(
  cursor: string | undefined,
  limit: number,
  decode: (cursor: string) => Option.Option<Position>,
  encode: (row: Row) => string,
  fetch: (after: Option.Option<Position>) => Effect.Effect<ReadonlyArray<Row>, E, R>
) =>
  fetchedPageAfter(cursor, decode, encode, (after) =>
    Effect.map(fetch(after), (rows) => ({ rows: rows.slice(0, limit), more: rows.length > limit }))
  )

/** One page of a newest-first list keyed by (created_at, id), over a fetch that ends its page itself (`bytePage`). */
export const fetchedPageByTime = <Row extends { readonly created_at: Date; readonly id: string }, E, R>(
  cursor: string | undefined,
  fetch: (after: Option.Option<{ readonly at: string; readonly id: string }>) => Effect.Effect<FetchedPage<Row>, E, R>
) => fetchedPageAfter(cursor, decodeTimeCursor, (row: Row) => encodeTimeCursor(row.created_at, row.id), fetch)

/** One page of a newest-first list keyed by (time, id), `timeOf` naming each row's time. */
export const pageByTimeOf =
  <Row extends { readonly id: string }>(timeOf: (row: Row) => Date) =>
  <E, R>(
    cursor: string | undefined,
    limit: number,
    fetch: (
      after: Option.Option<{ readonly at: string; readonly id: string }>
    ) => Effect.Effect<ReadonlyArray<Row>, E, R>
  ) =>
    pageAfter(cursor, limit, decodeTimeCursor, (row: Row) => encodeTimeCursor(timeOf(row), row.id), fetch)

/** One page of a newest-first list keyed by (created_at, id). */
export const pageByTime = <Row extends { readonly created_at: Date; readonly id: string }, E, R>(
  cursor: string | undefined,
  limit: number,
  fetch: (after: Option.Option<{ readonly at: string; readonly id: string }>) => Effect.Effect<ReadonlyArray<Row>, E, R>
) => pageByTimeOf((row: Row) => row.created_at)(cursor, limit, fetch)

/** A `[version]` cursor: a version number from 1 to the largest `integer` column value. */
export const decodeVersionCursor = (cursor: string): Option.Option<number> =>
  decodeCursor(cursor, 1).pipe(
    Option.filter(([version]) => /^[1-9][0-9]{0,9}$/.test(version!) && Number(version) <= 2_147_483_647),
    Option.map(([version]) => Number(version))
  )

/** One page of a list ordered by version, highest first: rows below the cursor's version. */
export const pageByVersion = <Row extends { readonly version: number }, E, R>(
  cursor: string | undefined,
  limit: number,
  fetch: (below: Option.Option<number>) => Effect.Effect<ReadonlyArray<Row>, E, R>
) => pageAfter(cursor, limit, decodeVersionCursor, (row: Row) => encodeCursor([String(row.version)]), fetch)

/**
 * The window of a list around its row that `isTarget` picks: from `rows` (in list order, holding up to
 * `limit` rows on each side of it), the `limit` nearest it, as many before as after, topped up from the
 * other side near either end of the list. `more`: rows of the list follow the window. Undefined when no
 * row is the target.
 */
export const windowAround = <Row>(rows: ReadonlyArray<Row>, isTarget: (row: Row) => boolean, limit: number) => {
  const target = rows.findIndex(isTarget)
  if (target < 0) return undefined
  const size = Math.min(limit, rows.length)
  const start = Math.max(0, Math.min(target - Math.floor(size / 2), rows.length - size))
  const end = start + size
  return { window: rows.slice(start, end), more: end < rows.length }
}
