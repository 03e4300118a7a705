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
