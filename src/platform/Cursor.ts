/** Keyset page cursors: the last row's sort key, opaque to clients. */
import { Effect, Option } from "effect"
import { BadRequest } from "../http/Errors.js"
import { isInstant } from "./Schemas.js"

export const encodeCursor = (parts: ReadonlyArray<string>) => Buffer.from(JSON.stringify(parts)).toString("base64url")

/** Text PostgreSQL cannot take as a parameter: a NUL character. */
const UNSTORABLE = /\u0000/

/** `None` for anything that is not a cursor of `size` strings (none holding what the database refuses). */
export const decodeCursor = (cursor: string, size: number): Option.Option<ReadonlyArray<string>> => {
  const parsed = Option.liftThrowable(() => JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) as unknown)()
  return Option.filter(
    parsed,
    (value): value is ReadonlyArray<string> =>
      Array.isArray(value) &&
      value.length === size &&
      value.every((part) => typeof part === "string" && !UNSTORABLE.test(part))
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

/**
 * One page of a keyset-paged list: decodes the cursor with `decode` (400 when it is not one of ours),
 * fetches the page past the position it names with whether more rows follow, and answers the page with
 * `next_cursor` (the page's last row, by `encode`) when they do.
 */
export const pageAfterCut = <Position, Row, E, R>(
  cursor: string | undefined,
  decode: (cursor: string) => Option.Option<Position>,
  encode: (row: Row) => string,
  fetch: (
    after: Option.Option<Position>
  ) => Effect.Effect<{ readonly rows: ReadonlyArray<Row>; readonly more: boolean }, E, R>
) =>
  Effect.gen(function* () {
    const after = cursor === undefined ? Option.none() : decode(cursor)
    if (cursor !== undefined && Option.isNone(after)) return yield* invalidCursor
    const { more, rows } = yield* fetch(after)
    const last = rows[rows.length - 1]
    return { page: rows, next: more && last !== undefined ? { next_cursor: encode(last) } : {} }
  })

/** `pageAfterCut` over a fetch of `limit + 1` rows: more follow when it found them. */
const pageAfter = <Position, Row, E, R>(
  cursor: string | undefined,
  limit: number,
  decode: (cursor: string) => Option.Option<Position>,
  encode: (row: Row) => string,
  fetch: (after: Option.Option<Position>) => Effect.Effect<ReadonlyArray<Row>, E, R>
) =>
  pageAfterCut(cursor, decode, encode, (after) =>
    Effect.map(fetch(after), (rows) => ({ rows: rows.slice(0, limit), more: rows.length > limit }))
  )

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

/** One page of a newest-first list keyed by (created_at, id) whose fetch says whether more rows follow. */
export const pageByTimeCut = <Row extends { readonly created_at: Date; readonly id: string }, E, R>(
  cursor: string | undefined,
  fetch: (
    after: Option.Option<{ readonly at: string; readonly id: string }>
  ) => Effect.Effect<{ readonly rows: ReadonlyArray<Row>; readonly more: boolean }, E, R>
) => pageAfterCut(cursor, decodeTimeCursor, (row: Row) => encodeTimeCursor(row.created_at, row.id), fetch)

/**
 * One page of a list ordered by (created_at, id), newest first, whose cursor names only its last row's id:
 * the fetch reads that row's own time, so stored microseconds never skip or repeat a row.
 */
export const pageByRowCut = <Row extends { readonly id: string }, E, R>(
  cursor: string | undefined,
  fetch: (
    after: Option.Option<string>
  ) => Effect.Effect<{ readonly rows: ReadonlyArray<Row>; readonly more: boolean }, E, R>
) =>
  pageAfterCut(
    cursor,
    (text) =>
      Option.map(
        Option.filter(decodeCursor(text, 1), ([id]) => id!.length > 0),
        ([id]) => id!
      ),
    (row: Row) => encodeCursor([row.id]),
    fetch
  )

/** A `[version]` cursor: a version number from 1 to the largest `integer` column value. */
export const decodeVersionCursor = (cursor: string): Option.Option<number> =>
  decodeCursor(cursor, 1).pipe(
    Option.filter(([version]) => /^[1-9][0-9]{0,9}$/.test(version!) && Number(version) <= 2_147_483_647),
    Option.map(([version]) => Number(version))
  )

/**
 * One page of a list ordered by version, highest first: rows below the cursor's version; the fetch says
 * whether more rows follow (it may cut the page short, e.g. by bytes).
 */
export const pageByVersionCut = <Row extends { readonly version: number }, E, R>(
  cursor: string | undefined,
  fetch: (
    below: Option.Option<number>
  ) => Effect.Effect<{ readonly rows: ReadonlyArray<Row>; readonly more: boolean }, E, R>
) => pageAfterCut(cursor, decodeVersionCursor, (row: Row) => encodeCursor([String(row.version)]), fetch)

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
