/** Checks on client JSON before it reaches any schema or PostgreSQL. */
import { Limits } from "./Schemas.js"

const { depth: MAX_DEPTH, items: MAX_ITEMS, keys: MAX_KEYS } = Limits.body

/**
 * JSON that PostgreSQL cannot store (text with NUL characters or lone
 * surrogates), that nests absurdly deep or whose arrays or objects are
 * absurdly large (docs/limits.md, "any JSON body") is refused up front, with
 * the path of the first offending value, rather than failing later in a
 * schema walk or the database.
 */
export const unstorableJson = (value: unknown, path = "", depth = 0): { path: string; message: string } | undefined => {
  if (typeof value === "string") return unstorableText(value, path)
  // JSON.parse reads 1e400 as Infinity, which JSON.stringify then writes as null: stored, it changed silently.
  if (typeof value === "number") return Number.isFinite(value) ? undefined : { path, message: "is out of range" }
  if (typeof value !== "object" || value === null) return undefined
  if (depth >= MAX_DEPTH) return { path, message: `nested deeper than ${MAX_DEPTH} levels` }
  const size = Array.isArray(value) ? value.length : Object.keys(value).length
  const cap = Array.isArray(value) ? MAX_ITEMS : MAX_KEYS
  if (size > cap) {
    return {
      path,
      message: `has ${size.toLocaleString("en-US")} ${Array.isArray(value) ? "items" : "keys"}; at most ${cap.toLocaleString("en-US")} are accepted`
    }
  }
  for (const [key, child] of Object.entries(value)) {
    const childPath = path === "" ? key : `${path}.${key}`
    // Decoding copies keys onto a new object, where this one sets its prototype instead: dropped without a word.
    if (key === "__proto__") return { path: childPath, message: "is not accepted as a key" }
    const problem = unstorableText(key, childPath) ?? unstorableJson(child, childPath, depth + 1)
    if (problem !== undefined) return problem
  }
  return undefined
}

const BACKSLASH = 92
const COLON = 58

/** Whether the quote at `at` is escaped (an odd run of backslashes before it). */
const escapedAt = (text: string, at: number) => {
  let backslashes = 0
  for (let index = at - 1; text.charCodeAt(index) === BACKSLASH; index--) backslashes += 1
  return backslashes % 2 === 1
}

/**
 * The object keys written in valid JSON text: its strings followed by a colon. Found with `indexOf` from quote
 * to quote (linear; a regex over a string of megabytes overflowed V8's backtracking stack).
 */
const keysWritten = (text: string) => {
  let count = 0
  let open = text.indexOf('"')
  while (open !== -1) {
    let close = text.indexOf('"', open + 1)
    while (close !== -1 && escapedAt(text, close)) close = text.indexOf('"', close + 1)
    if (close === -1) break
    let next = close + 1
    while (next < text.length && " \t\n\r".includes(text[next]!)) next += 1
    if (text.charCodeAt(next) === COLON) count += 1
    open = text.indexOf('"', next)
  }
  return count
}

const keysIn = (value: unknown): number => {
  if (typeof value !== "object" || value === null) return 0
  let count = Array.isArray(value) ? 0 : Object.keys(value).length
  for (const child of Array.isArray(value) ? value : Object.values(value)) count += keysIn(child)
  return count
}

/**
 * Whether `text` (valid JSON, parsed into `value`) names a key twice in one object: its text holds more keys
 * than the parsed objects, where the last of each name won. A reader that keeps the first would see another
 * message than the one decided (a gateway hands the text on as sent).
 */
export const hasDuplicateKeys = (text: string, value: unknown) => keysWritten(text) !== keysIn(value)

const unstorableText = (text: string, path: string) =>
  text.includes("\u0000")
    ? { path, message: "contains a NUL character" }
    : text.isWellFormed()
      ? undefined
      : { path, message: "contains an unpaired surrogate (not valid Unicode)" }

// A \u escape PostgreSQL's jsonb refuses (NUL, or a surrogate JSON.stringify escaped because it was
// unpaired), preceded by an even run of backslashes so that it is an escape and not escaped text.
const UNSTORABLE_ESCAPE = /(?<!\\)((?:\\\\)*)\\u(?:0000|[dD][89abAB][0-9a-fA-F]{2}|[dD][c-fC-F][0-9a-fA-F]{2})/g

/**
 * `value` as JSON text that jsonb stores: NUL characters and unpaired surrogates become U+FFFD, one
 * UTF-16 unit for one, so offsets into the text stay right. For what the service records of text it
 * did not refuse (a provider's answer, a tool's result or definition): a request's own JSON with
 * such text is refused up front (`unstorableJson`).
 */
export const storableJsonText = (value: unknown): string => {
  const json = JSON.stringify(value)
  return json.includes("\\u") ? json.replace(UNSTORABLE_ESCAPE, "$1\\ufffd") : json
}
