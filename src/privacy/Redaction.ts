/**
 * What the service keeps of customer content under a workspace's
 * `data_handling_mode`. Pure functions, no I/O:
 * - `raw_allowed`: content as sent;
 * - `redacted`: PII and secrets replaced by typed placeholders (`[EMAIL]`,
 *   `[PHONE]`, `[CARD]`, `[IBAN]`, `[API_KEY]`, `[JWT]`);
 * - `metadata_only`: only the SHA-256 digest and the length of the content.
 * Decisions are made on the raw content; these apply only to what is stored
 * or published.
 */
import { createHash } from "node:crypto"
import { entropy } from "../detection/Checksums.js"
import { cardSpans, ibanSpans, type TextSpan } from "../detection/Financial.js"
import { isLocalPartCode } from "../detection/Pii.js"

export type DataHandlingMode = "raw_allowed" | "redacted" | "metadata_only"

export interface ContentDigest {
  readonly sha256: string
  /** Length in UTF-16 code units (JavaScript string length). */
  readonly length: number
}

export const digestOf = (text: string): ContentDigest => ({
  sha256: createHash("sha256").update(text, "utf8").digest("hex"),
  length: text.length
})

// ---- detectors
// Every pattern is linear in the text: a text up to the content cap (4 MiB) is redacted before it is stored, on the
// event loop, so a pattern that retries from every position (a quadratic scan) would stall the whole process.

const looksLikeSecret = (value: string) =>
  value.length >= 16 && entropy(value) >= 3.2 && /[0-9]/.test(value) && /[A-Za-z]/.test(value)

const JWT = /\beyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{8,}/g
const KNOWN_KEYS =
  /(?<![A-Za-z0-9_-])(?:sk-(?:proj-|ant-(?:api\d+-)?)?[A-Za-z0-9_-]{16,}|gr_(?:live|test)_[A-Za-z0-9_-]{16,}|(?:AKIA|ASIA)[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}|xox[abprs]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{35})(?![A-Za-z0-9_-])/g
/**
 * `key=...`, `api_key: "..."`, `x-auth-token=...`: the value is a secret when it looks random. The keyword starts a
 * word or follows `<letters or digits>_`, checked behind it (a pattern walking a name's parts from its start
 * retried each part of a long `a-b-c-...` text).
 */
const ASSIGNED_SECRET =
  /(?:(?<![A-Za-z0-9_])|(?<=[A-Za-z0-9]_))((?:api[_-]?key|apikey|key|token|secret|password|passwd|pwd|credential|auth)\s*(?:["']\s*)?[=:]\s*["']?)([A-Za-z0-9_\-./+=]{16,})/gi
const EMAIL_DOMAIN = /[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}/y
/**
 * The lookahead gives up at once on a first run of digits that runs into a letter or is over 24 digits long (no
 * match can end inside it): the groups would otherwise try every split of it into 2-4 digit parts first.
 */
const PHONE =
  /(?<![\w+])(?:\+\d{1,3}[\s.-]?)?(?:\(\d{1,4}\)[\s.-]?)?(?!\d*[A-Za-z_]|\d{25})\d{1,4}(?:[\s.-]?\d{2,4}){1,5}(?!\w)/g
const DATE_LIKE = /^\d{4}[-./]\d{1,2}[-./]\d{1,2}$|^\d{1,2}[-./]\d{1,2}[-./]\d{4}$/

const digitsOf = (value: string) => value.replace(/\D/g, "")

/** Replaces the `[start, end)` spans (in order, not overlapping) of `text` by `placeholder`. */
const replaceSpans = (text: string, spans: ReadonlyArray<TextSpan>, placeholder: string) => {
  if (spans.length === 0) return text
  let out = ""
  let copied = 0
  for (const [start, end] of spans) {
    out += text.slice(copied, start) + placeholder
    copied = end
  }
  return out + text.slice(copied)
}

/** `text` with what `find` finds in it replaced by `placeholder`. */
const replaceSpansOf = (placeholder: string, find: (text: string) => ReadonlyArray<TextSpan>, text: string) =>
  replaceSpans(text, find(text), placeholder)

/** E-mail addresses, found from each "@": the local part scanned back (never past the previous "@"), the domain matched forward. */
const redactEmails = (text: string) => {
  const spans: Array<TextSpan> = []
  let passed = 0
  for (let at = text.indexOf("@"); at >= 0; at = text.indexOf("@", Math.max(at + 1, passed))) {
    let start = at
    while (start > passed && isLocalPartCode(text.charCodeAt(start - 1))) start--
    if (start === at) continue
    EMAIL_DOMAIN.lastIndex = at + 1
    if (EMAIL_DOMAIN.exec(text) === null) continue
    passed = EMAIL_DOMAIN.lastIndex
    spans.push([start, passed])
  }
  return replaceSpans(text, spans, "[EMAIL]")
}

/** Replaces PII and secrets in `text` by typed placeholders. */
export const redactText = (text: string): string =>
  replaceSpansOf(
    "[CARD]",
    cardSpans,
    replaceSpansOf(
      "[IBAN]",
      ibanSpans,
      redactEmails(
        text
          .replace(JWT, "[JWT]")
          .replace(KNOWN_KEYS, "[API_KEY]")
          .replace(ASSIGNED_SECRET, (match, prefix: string, value: string) =>
            looksLikeSecret(value) ? `${prefix}[API_KEY]` : match
          )
      )
    )
  ).replace(PHONE, (match) => {
    const digits = digitsOf(match)
    if (digits.length < 7 || digits.length > 15 || DATE_LIKE.test(match)) return match
    // A bare run of digits is a phone number only when it is long enough to be one.
    const formatted = /^\+|[\s.()-]/.test(match)
    return formatted || digits.length >= 10 ? "[PHONE]" : match
  })

// ---- what is kept

/** A string kept in a text column: raw, redacted, or a digest line (metadata_only). */
export const keepString = (mode: DataHandlingMode, text: string): string => {
  if (mode === "raw_allowed") return text
  if (mode === "redacted") return redactText(text)
  const { length, sha256 } = digestOf(text)
  return `[sha256:${sha256} length:${length}]`
}

export const keepOptionalString = (mode: DataHandlingMode, text: string | null | undefined) =>
  text === null || text === undefined ? (text ?? null) : keepString(mode, text)

/**
 * A JSON value kept in a JSON column: raw; every string redacted (object keys
 * stay), and every number whose decimal text would be; or, under
 * metadata_only, the digest of the whole value's JSON.
 */
export const keepJson = (mode: DataHandlingMode, value: unknown): unknown => {
  if (mode === "raw_allowed" || value === null || value === undefined) return value ?? null
  if (mode === "metadata_only") return digestOf(typeof value === "string" ? value : JSON.stringify(value))
  return redactDeep(value)
}

const redactDeep = (value: unknown): unknown => {
  if (typeof value === "string") return redactText(value)
  // A card or phone number sent as a JSON number is the same PII as its text: it becomes the placeholder.
  if (typeof value === "number") {
    const text = String(value)
    const redacted = redactText(text)
    return redacted === text ? value : redacted
  }
  if (Array.isArray(value)) return value.map(redactDeep)
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, redactDeep(inner)]))
  }
  return value
}

/**
 * For the red-team domain: an attack prompt or the target's reply as it may
 * be stored or published under the workspace's mode (a string in every mode).
 */
export const keepAttackText = (mode: DataHandlingMode, text: string): string => keepString(mode, text)
