/**
 * Spans of a text that look encoded (base64, hex, URL percent-encoding,
 * bytes hidden in a run of variation selectors), decoded once. A decoded span is kept only when it decodes to readable
 * text, and any range of it maps back to the whole raw encoded range.
 */
import type { TextView } from "./Types.js"

/** At most this many decoded spans and decoded characters per text: bounded work on any input. */
const MAX_DECODED_SPANS = 32
const MAX_DECODED_CHARS = 64 * 1024

const MIN_RUN = 16
const ESCAPED_HEX_RUN = /(?:\\x[0-9A-Fa-f]{2}){4,}/g
const PERCENT = /%[0-9A-Fa-f]{2}/g
const MIN_PERCENT_ESCAPES = 2

const utf8 = new TextDecoder("utf-8", { fatal: false })

/**
 * Readable: no replacement characters, no control characters other than
 * tab and newlines, and at least half letters or digits. Random bytes
 * almost never pass.
 */
const readable = (text: string) => {
  if (text.length < 4) return false
  let letters = 0
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code === 0xfffd || (code < 0x20 && code !== 0x09 && code !== 0x0a && code !== 0x0d) || code === 0x7f)
      return false
    if (((code | 0x20) >= 0x61 && (code | 0x20) <= 0x7a) || (code >= 0x30 && code <= 0x39) || code > 0x7f) letters++
  }
  return letters * 2 >= text.length
}

const decodeBase64 = (encoded: string) => utf8.decode(Buffer.from(encoded, "base64"))
const decodeHex = (encoded: string) => utf8.decode(Buffer.from(encoded.replace(/\\x/g, ""), "hex"))
const decodePercent = (encoded: string) => {
  try {
    return decodeURIComponent(encoded.replace(/\+/g, " "))
  } catch {
    return utf8.decode(
      Buffer.from(
        encoded.replace(/%([0-9A-Fa-f]{2})/g, (_, pair: string) => String.fromCharCode(parseInt(pair, 16))),
        "latin1"
      )
    )
  }
}

interface Encoded {
  readonly start: number
  readonly end: number
  readonly encoding: NonNullable<TextView["encoding"]>
  readonly decoded: string
}

const isTokenBreak = (code: number) =>
  code <= 0x20 || code === 0x22 || code === 0x27 || code === 0x3c || code === 0x3e || code === 0x60

/** Whitespace-delimited tokens holding at least two %XX escapes (found by a literal scan, then widened). */
const percentTokens = (raw: string, found: Array<Encoded>) => {
  PERCENT.lastIndex = 0
  let lastEnd = -1
  for (let match = PERCENT.exec(raw); match !== null; match = PERCENT.exec(raw)) {
    if (match.index < lastEnd) continue
    let start = match.index
    while (start > 0 && !isTokenBreak(raw.charCodeAt(start - 1))) start--
    let end = match.index
    while (end < raw.length && !isTokenBreak(raw.charCodeAt(end))) end++
    lastEnd = end
    PERCENT.lastIndex = end
    if (found.length >= MAX_DECODED_SPANS) return
    const token = raw.slice(start, end)
    let escapes = 0
    for (let i = token.indexOf("%"); i >= 0 && escapes < MIN_PERCENT_ESCAPES; i = token.indexOf("%", i + 1)) escapes++
    if (escapes < MIN_PERCENT_ESCAPES) continue
    const decoded = decodePercent(token)
    if (decoded !== token && readable(decoded)) found.push({ start, end, encoding: "url", decoded })
  }
}

const scan = (
  raw: string,
  pattern: RegExp,
  encoding: Encoded["encoding"],
  decode: (encoded: string) => string,
  found: Array<Encoded>
) => {
  pattern.lastIndex = 0
  for (let match = pattern.exec(raw); match !== null && found.length < MAX_DECODED_SPANS; match = pattern.exec(raw)) {
    const decoded = decode(match[0])
    if (readable(decoded)) found.push({ start: match.index, end: match.index + match[0].length, encoding, decoded })
  }
}

// Character classes of base64 (standard and URL-safe) and hex, by code unit.
const BASE64_CHAR = new Uint8Array(128)
for (let code = 0; code < 128; code++) {
  const char = String.fromCharCode(code)
  if (/[A-Za-z0-9+/_-]/.test(char)) BASE64_CHAR[code] = /[0-9A-Fa-f]/.test(char) ? 2 : 1
}

/**
 * One pass over the text: each maximal run of base64 characters of 16 or
 * more is decoded as hex when it is all hex digits (of even length),
 * otherwise as base64 when it mixes cases or has digits (a plain long word
 * does not).
 */
const scanRuns = (raw: string, found: Array<Encoded>) => {
  let start = 0
  let hexOnly = true
  let upper = false
  let lower = false
  let digit = false
  for (let i = 0; i <= raw.length; i++) {
    const code = i < raw.length ? raw.charCodeAt(i) : 0
    const kind = code < 128 ? BASE64_CHAR[code]! : 0
    if (kind !== 0) {
      if (i === start) {
        hexOnly = true
        upper = lower = digit = false
      }
      if (kind === 1) hexOnly = false
      if (code >= 0x30 && code <= 0x39) digit = true
      else if (code >= 0x41 && code <= 0x5a) upper = true
      else if (code >= 0x61 && code <= 0x7a) lower = true
      continue
    }
    const length = i - start
    if (length >= MIN_RUN && found.length < MAX_DECODED_SPANS) {
      let end = i
      while (end < raw.length && end - i < 2 && raw.charCodeAt(end) === 0x3d) end++
      const encoded = raw.slice(start, end)
      const asHex = hexOnly && length % 2 === 0
      if (asHex || (upper && lower) || digit) {
        const decoded = asHex ? decodeHex(encoded) : decodeBase64(encoded)
        if (readable(decoded)) found.push({ start, end, encoding: asHex ? "hex" : "base64", decoded })
      }
    }
    start = i + 1
  }
}

/**
 * The 256 variation selectors (U+FE00-U+FE0F: bytes 0-15; U+E0100-U+E01EF: bytes 16-255) are invisible,
 * so a run of them after a visible character can carry any bytes unseen ("emoji smuggling"). A run of
 * MIN_SELECTOR_BYTES or more is read as UTF-8; one selector after an emoji (U+FE0F) is just presentation.
 */
const MIN_SELECTOR_BYTES = 4
const VARIATION_SELECTOR = /[\uFE00-\uFE0F]|\uDB40[\uDD00-\uDDEF]/

const selectorByte = (raw: string, at: number): number => {
  const code = raw.charCodeAt(at)
  if (code >= 0xfe00 && code <= 0xfe0f) return code - 0xfe00
  if (code !== 0xdb40) return -1
  const low = raw.charCodeAt(at + 1)
  return low >= 0xdd00 && low <= 0xddef ? low - 0xdd00 + 16 : -1
}

const selectorRuns = (raw: string, found: Array<Encoded>) => {
  const bytes: Array<number> = []
  let runStart = 0
  for (let i = 0; i <= raw.length && found.length < MAX_DECODED_SPANS;) {
    const byte = i < raw.length ? selectorByte(raw, i) : -1
    if (byte >= 0) {
      if (bytes.length === 0) runStart = i
      // UTF-8 takes at most 4 bytes a character: past that many, nothing more could be kept (MAX_DECODED_CHARS).
      if (bytes.length < MAX_DECODED_CHARS * 4) bytes.push(byte)
      i += byte < 16 ? 1 : 2
      continue
    }
    if (bytes.length >= MIN_SELECTOR_BYTES) {
      const decoded = utf8.decode(Uint8Array.from(bytes))
      if (readable(decoded)) found.push({ start: runStart, end: i, encoding: "variation_selectors", decoded })
    }
    bytes.length = 0
    i++
  }
}

const overlapsEarlier = (found: ReadonlyArray<Encoded>, candidate: Encoded) =>
  found.some(
    (other) =>
      other !== candidate &&
      other.start <= candidate.start &&
      other.end >= candidate.end &&
      found.indexOf(other) < found.indexOf(candidate)
  )

/**
 * The decoded views of `raw`: each readable decoded span, folded with `fold`
 * (the same normalisation as the raw text), mapping back to its encoded range.
 */
export const decodedViews = (raw: string, fold: (decoded: string) => TextView): ReadonlyArray<TextView> => {
  const found: Array<Encoded> = []
  if (raw.indexOf("%") >= 0) percentTokens(raw, found)
  if (raw.indexOf("\\x") >= 0) scan(raw, ESCAPED_HEX_RUN, "hex", decodeHex, found)
  scanRuns(raw, found)
  if (VARIATION_SELECTOR.test(raw)) selectorRuns(raw, found)
  const result: Array<TextView> = []
  let chars = 0
  for (const span of found) {
    if (result.length >= MAX_DECODED_SPANS || chars + span.decoded.length > MAX_DECODED_CHARS) break
    if (overlapsEarlier(found, span)) continue
    chars += span.decoded.length
    const whole = { start: span.start, end: span.end }
    result.push({ kind: "decoded", encoding: span.encoding, text: fold(span.decoded).text, toRaw: () => whole })
  }
  return result
}
