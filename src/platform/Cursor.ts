/** Keyset page cursors: the last row's sort key, opaque to clients. */
import { Option } from "effect"

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

/** A `[created_at, id]` cursor: an RFC 3339 millisecond timestamp and a non-empty id. */
export const decodeTimeCursor = (cursor: string): Option.Option<{ readonly at: string; readonly id: string }> =>
  decodeCursor(cursor, 2).pipe(
    Option.filter(([at, id]) => RFC3339_MS.test(at!) && !Number.isNaN(Date.parse(at!)) && id!.length > 0),
    Option.map(([at, id]) => ({ at: at!, id: id! }))
  )

export const encodeTimeCursor = (at: Date, id: string) => encodeCursor([at.toISOString(), id])
