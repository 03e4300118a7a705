/** Schema building blocks shared by every domain's contract. */
import { Schema } from "effect"

/** RFC 3339 UTC timestamp with milliseconds, e.g. `2026-11-22T10:00:00.000Z`. */
export const Timestamp = Schema.String.annotations({
  identifier: "Timestamp",
  description: "RFC 3339 timestamp in UTC with milliseconds",
  examples: ["2026-11-22T10:00:00.000Z"]
})

/** Any JSON value the client owns (metadata and similar). */
export const JsonValue = Schema.Unknown.annotations({ identifier: "JsonValue", description: "Any JSON value" })

/** A `limit` query parameter: an integer >= `minimum`; values above the cap are clamped by the handler. */
export const LimitParam = (minimum = 0) =>
  Schema.NumberFromString.pipe(Schema.int(), Schema.greaterThanOrEqualTo(minimum)).annotations({
    description: `Page size (minimum ${minimum}); above the cap it is clamped; default 50`
  })

/** Opaque cursor from a previous page's `next_cursor`. */
export const CursorParam = Schema.String.annotations({ description: "Cursor from a previous page's next_cursor" })

/** Clamps a requested page size to `cap`, defaulting to 50 (or the cap when smaller). */
export const pageSize = (requested: number | undefined, cap: number) => Math.min(requested ?? Math.min(50, cap), cap)

/** A YAML or JSON text body (`application/yaml`; `application/json` text is accepted too). */
export const YamlDocument = Schema.Uint8ArrayFromSelf.annotations({
  description: "A YAML (or JSON) document as text"
})

/** Formats a database timestamp as RFC 3339 UTC with milliseconds. */
export const toTimestamp = (value: Date | string): string => new Date(value).toISOString()

/** Like `toTimestamp`, keeping null. */
export const toTimestampOrNull = (value: Date | string | null): string | null =>
  value === null ? null : toTimestamp(value)
