/** Schema building blocks shared by every domain's contract. */
import { Schema } from "effect"

/** RFC 3339 UTC timestamp with milliseconds, e.g. `2026-11-22T10:00:00.000Z`. */
export const Timestamp = Schema.String.pipe(
  Schema.maxLength(64, { message: () => "must be at most 64 characters (an RFC 3339 timestamp)" })
).annotations({
  identifier: "Timestamp",
  description: "RFC 3339 timestamp in UTC with milliseconds",
  examples: ["2026-11-22T10:00:00.000Z"]
})

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:Z|[+-](\d{2}):(\d{2}))$/i
const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]

/**
 * An RFC 3339 date-time with its offset (seconds optional) naming a real instant from year 1 on. `Date.parse`
 * alone reads `-1`, `1.5` or `2026-02-30` as some date, which then misleads or reaches the database.
 */
export const isInstant = (text: string): boolean => {
  const parts = RFC3339.exec(text)
  if (parts === null) return false
  const [year, month, day, hour, minute, second, offsetHours, offsetMinutes] = parts
    .slice(1)
    .map((part) => Number(part ?? 0))
  const leap = year! % 4 === 0 && (year! % 100 !== 0 || year! % 400 === 0)
  const monthDays = month === 2 && leap ? 29 : (DAYS_IN_MONTH[month! - 1] ?? 0)
  return (
    year! >= 1 &&
    day! >= 1 &&
    day! <= monthDays &&
    hour! <= 23 &&
    minute! <= 59 &&
    second! <= 59 &&
    offsetHours! <= 23 &&
    offsetMinutes! <= 59 &&
    !Number.isNaN(Date.parse(text))
  )
}

const INSTANT_MESSAGE = "must be an RFC 3339 timestamp, e.g. 2026-11-24T00:00:00Z"

/** An RFC 3339 instant in a request (a query bound, a replay window); anything else is a 400 naming the field. */
export const InstantParam = Timestamp.pipe(Schema.filter(isInstant, { message: () => INSTANT_MESSAGE }))

/** Any JSON value the client owns (metadata and similar). */
export const JsonValue = Schema.Unknown.annotations({ identifier: "JsonValue", description: "Any JSON value" })

/** A `limit` query parameter: an integer >= `minimum`; values above the cap are clamped by the handler. */
export const LimitParam = (minimum = 1) =>
  Schema.NumberFromString.pipe(Schema.int(), Schema.greaterThanOrEqualTo(minimum)).annotations({
    description: `Page size (minimum ${minimum}); above the cap it is clamped; default 50`
  })

/** Opaque cursor from a previous page's `next_cursor`. */
export const CursorParam = Schema.String.pipe(
  Schema.maxLength(1_000, { message: () => "must be at most 1,000 characters (a next_cursor value)" })
).annotations({ description: "Cursor from a previous page's next_cursor" })

/** Clamps a requested page size to `cap`, defaulting to 50 (or the cap when smaller). */
export const pageSize = (requested: number | undefined, cap: number) => Math.min(requested ?? Math.min(50, cap), cap)

/** A YAML or JSON text body (`application/yaml`; `application/json` text is accepted too). */
export const YamlDocument = Schema.Uint8ArrayFromSelf.annotations({
  description: "A YAML (or JSON) document as text"
})

/**
 * An RFC 3339 text (InstantParam) as the instant it names, for SQL: PostgreSQL's own reading of the text
 * refuses offsets past 15:59, which RFC 3339 allows up to 23:59.
 */
export const instantOf = (text: string) => new Date(text)

/** Formats a database timestamp as RFC 3339 UTC with milliseconds. */
export const toTimestamp = (value: Date | string): string => new Date(value).toISOString()

/** Like `toTimestamp`, keeping null. */
export const toTimestampOrNull = (value: Date | string | null): string | null =>
  value === null ? null : toTimestamp(value)

// ---- bounds (docs/limits.md lists every one; change a number there too)

/** Every cap on client input, in one place. */
export const Limits = {
  /** Display names, titles. */
  name: 200,
  /** Caller-chosen ids and references to ids (agent ids, policy ids, model names, filters). */
  identifier: 200,
  /** Descriptions, notes, reasons. */
  text: 4_000,
  /** Prompts, summaries, replacement text, YAML-authored strings. */
  longText: 65_536,
  /** Knowledge-source text. */
  content: 524_288,
  /**
   * Decided text (`action.content`, strings in `action.params`): as high as MAX_MATCH_CONTENT_BYTES may be set
   * (4 MiB), so over-long text meets that cap's 413 `content_too_large`, never a 400 of its own.
   */
  decidedContent: 4_194_304,
  /** URLs. */
  url: 2_048,
  /** A list field inside a request (unless the field says otherwise). */
  items: 1_000,
  /** Free-form JSON fields (metadata, params, config...): nesting depth, keys per object, items per array, characters per string. */
  json: { depth: 16, keys: 256, items: 1_000, string: 65_536 },
  /** YAML/JSON documents (policies, agent profiles): body bytes (413 above), and YAML tokens (parsing cost grows with them). */
  yaml: { bytes: 262_144, tokens: 10_000 },
  /**
   * A knowledge source's `metadata`, in JSON bytes: its endpoint takes 14 MiB bodies (for files), and every
   * source's metadata is in `GET /v1/knowledge-sources`.
   */
  knowledgeMetadataBytes: 65_536,
  /** A workspace's stored settings `config`, merged from its patches, in JSON bytes (every hot path caches it). */
  settingsConfigBytes: 262_144,
  /** Any JSON body, before any schema: depth, keys per object, items per array. */
  body: { depth: 64, keys: 1_000, items: 10_000 }
} as const

/** A string of at most `max` characters; the message names the limit (never the value). */
export const boundedString = (max: number) =>
  Schema.String.pipe(
    Schema.maxLength(max, { message: () => `must be at most ${max.toLocaleString("en-US")} characters` })
  )

/** Like `boundedString`, and not empty. */
export const nonEmptyBounded = (max: number) =>
  boundedString(max).pipe(Schema.minLength(1, { message: () => "must not be empty" }))

export const Name = boundedString(Limits.name)
export const NonEmptyName = nonEmptyBounded(Limits.name)
export const Identifier = boundedString(Limits.identifier)
export const NonEmptyIdentifier = nonEmptyBounded(Limits.identifier)
export const Description = boundedString(Limits.text)
export const Note = Description
export const LongText = boundedString(Limits.longText)
export const Content = boundedString(Limits.content)
export const DecidedContent = boundedString(Limits.decidedContent)
export const Url = boundedString(Limits.url)

/** A list of at most `max` items. */
export const boundedArray = <S extends Schema.Schema.Any>(item: S, max: number = Limits.items) =>
  Schema.Array(item).pipe(
    Schema.maxItems<Schema.Array$<S>>(max, { message: () => `must have at most ${max.toLocaleString("en-US")} items` })
  )

interface JsonCaps {
  readonly depth: number
  readonly keys: number
  readonly items: number
  readonly string: number
}

/** The first place where `value` goes past `caps`, as a path below the value and a message naming the cap. */
export const jsonOverLimit = (
  value: unknown,
  caps: Partial<JsonCaps>,
  path: ReadonlyArray<PropertyKey> = [],
  depth = 0
): { readonly path: ReadonlyArray<PropertyKey>; readonly message: string } | undefined => {
  if (typeof value === "string") {
    return caps.string !== undefined && value.length > caps.string
      ? { path, message: `must be at most ${caps.string.toLocaleString("en-US")} characters` }
      : undefined
  }
  if (typeof value !== "object" || value === null) return undefined
  if (caps.depth !== undefined && depth >= caps.depth) {
    return { path, message: `must not nest deeper than ${caps.depth} levels` }
  }
  if (Array.isArray(value)) {
    if (caps.items !== undefined && value.length > caps.items) {
      return { path, message: `must have at most ${caps.items.toLocaleString("en-US")} items` }
    }
    for (let index = 0; index < value.length; index++) {
      const problem = jsonOverLimit(value[index], caps, [...path, index], depth + 1)
      if (problem !== undefined) return problem
    }
    return undefined
  }
  const keys = Object.keys(value)
  if (caps.keys !== undefined && keys.length > caps.keys) {
    return { path, message: `must have at most ${caps.keys.toLocaleString("en-US")} keys` }
  }
  for (const key of keys) {
    if (caps.string !== undefined && key.length > Limits.identifier) {
      return { path: [...path, key.slice(0, 40)], message: `keys must be at most ${Limits.identifier} characters` }
    }
    const problem = jsonOverLimit((value as Record<string, unknown>)[key], caps, [...path, key], depth + 1)
    if (problem !== undefined) return problem
  }
  return undefined
}

/** A JSON object (not an array) nested no deeper than a request body may be: what the gateways screen and walk. */
export const isScreenableObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" &&
  value !== null &&
  !Array.isArray(value) &&
  jsonOverLimit(value, { depth: Limits.body.depth }) === undefined

const jsonCapsText = `at most ${Limits.json.depth} levels deep, ${Limits.json.keys} keys per object, ${Limits.json.items} items per array, ${Limits.json.string} characters per string`

/** Free-form client JSON (metadata, params, config...), within `Limits.json`. */
export const BoundedJson = Schema.Unknown.pipe(
  Schema.filter((value) => jsonOverLimit(value, Limits.json), {
    jsonSchema: {},
    description: `Any JSON value, ${jsonCapsText}`
  })
).annotations({ identifier: "BoundedJson" })

/** A JSON object of free-form values (string keys), within `Limits.json` as a whole (strings up to `stringCap`). */
export const boundedJsonObject = (stringCap: number = Limits.json.string) =>
  Schema.Record({ key: Schema.String, value: Schema.Unknown }).pipe(
    Schema.filter((value) => jsonOverLimit(value, { ...Limits.json, string: stringCap }), {
      jsonSchema: { maxProperties: Limits.json.keys },
      description: `A JSON object, ${jsonCapsText.replace(String(Limits.json.string), String(stringCap))}`
    })
  )

/** `schema` (an object with free-form keys), held to `Limits.json` as a whole. */
export const withinJsonLimits = <S extends Schema.Schema.Any>(schema: S) =>
  schema.pipe(
    Schema.filter((value: unknown) => jsonOverLimit(value, Limits.json), {
      jsonSchema: { maxProperties: Limits.json.keys },
      description: jsonCapsText
    })
  )

/** An e-mail address field: at most 320 characters (RFC 5321's path limit). */
export const Email = boundedString(320)

/** Caps a validation message (a value quoted in it could be megabytes long). */
export const shortMessage = (message: string, max = 300) =>
  message.length <= max ? message : `${message.slice(0, max)}... (${message.length - max} more characters)`
