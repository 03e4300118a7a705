/**
 * Salient values of a text, for provenance without labels (docs/authorization.md): e-mail
 * addresses, IBANs, payment cards, phone numbers and URLs (the detectors of src/detection), long
 * digit runs (account numbers), long tokens and quoted strings. Each is normalised so formatting
 * does not hide it (case-folded e-mails and domains, no spaces in IBANs or numbers), then keyed
 * with HMAC-SHA256: only the HMACs are kept, never the values.
 *
 * The same extraction runs on both sides (the text that came in, a proposed param value), so a
 * value is recognised whatever its category was taken for in either place.
 */
import { createHmac } from "node:crypto"
import { views } from "../detection/Normalize.js"
import { detectPii } from "../detection/Pii.js"
import { detectUrls } from "../detection/Url.js"

/** At most this many distinct values are taken from one event (its text, or one param value). */
export const MAX_VALUES_PER_EVENT = 256

const PII_CATEGORIES = { categories: ["email", "phone", "iban", "card"] } as const
/** Account numbers: at least 8 digits, single spaces or dashes allowed between them. */
const DIGIT_RUN = /(?<!\d)\d(?:[ -]?\d){7,33}(?!\d)/g
const DIGITS = /(?<!\d)\d{8,34}(?!\d)/g
const DATE_SHAPED = /^\d{4}[-/ ]\d{1,2}[-/ ]\d{1,2}$|^\d{1,2}[-/ ]\d{1,2}[-/ ]\d{4}$/
/** Long tokens (ids, keys, references): 20+ word characters with letters and digits. */
const TOKEN = /(?<![A-Za-z0-9_-])[A-Za-z0-9_-]{20,256}(?![A-Za-z0-9_-])/g
const QUOTED = /"([^"\n]{5,200})"|\u201c([^\u201d\n]{5,200})\u201d/g
const LETTER = /[A-Za-z]/
const DIGIT = /\d/
const SPACES = /\s+/g

const fold = (text: string) => text.normalize("NFKC")
const digitsOnly = (text: string) => fold(text).replace(/\D/g, "")
/** Free text (a quoted string, a whole param value): trimmed, spaces collapsed, case-folded. */
export const normaliseText = (text: string) => fold(text).trim().replace(SPACES, " ").toLowerCase()

/** A URL with its scheme and host case-folded and no trailing slash; a bare domain case-folded. */
const normaliseUrl = (text: string): string => {
  const folded = fold(text)
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(folded)) return folded.toLowerCase().replace(/\/$/, "")
  try {
    const url = new URL(folded)
    return `${url.protocol}//${url.host}${url.pathname}${url.search}`.replace(/\/$/, "")
  } catch {
    return folded.toLowerCase()
  }
}

const normalisers: Record<string, (text: string) => string> = {
  email: (text) => fold(text).replace(SPACES, "").toLowerCase(),
  iban: (text) => fold(text).replace(SPACES, "").toUpperCase(),
  phone: digitsOnly,
  card: digitsOnly
}

/** Adds the normalised salient values of `text` to `into` (up to MAX_VALUES_PER_EVENT). */
export const salientValues = (text: string, into: Set<string>): Set<string> => {
  const add = (value: string) => {
    if (value.length >= 5 && into.size < MAX_VALUES_PER_EVENT) into.add(value)
  }
  const textViews = views(text)
  for (const finding of detectPii(textViews, PII_CATEGORIES)) {
    const normalise = normalisers[finding.category]
    for (const span of finding.spans) if (normalise !== undefined) add(normalise(text.slice(span.start, span.end)))
  }
  for (const finding of detectUrls(textViews)) {
    for (const span of finding.spans) add(normaliseUrl(text.slice(span.start, span.end)))
  }
  for (const pattern of [DIGIT_RUN, DIGITS]) {
    for (const match of text.matchAll(pattern)) if (!DATE_SHAPED.test(match[0])) add(digitsOnly(match[0]))
  }
  for (const match of text.matchAll(TOKEN)) {
    if (LETTER.test(match[0]) && DIGIT.test(match[0])) add(match[0])
  }
  for (const match of text.matchAll(QUOTED)) add(normaliseText(match[1] ?? match[2] ?? ""))
  return into
}

/** The values of one proposed param value: its salient values, and the whole value (it may be a quoted string). */
export const valuesOfParam = (value: string): Set<string> => {
  const values = salientValues(value, new Set())
  const whole = normaliseText(value)
  if (whole.length >= 5 && whole.length <= 200) values.add(whole)
  return values
}

/** The workspace's fingerprint key, derived from the service secret (domain-separated, per workspace). */
export const workspaceKey = (serviceSecret: string, workspaceId: string): Buffer =>
  createHmac("sha256", serviceSecret).update(`provenance-fingerprint/v1:${workspaceId}`).digest()

/** The stored form of a normalised value: base64url HMAC-SHA256 under the workspace's key. */
export const fingerprintOf = (key: Buffer, value: string): string =>
  createHmac("sha256", key).update(value, "utf8").digest("base64url")
