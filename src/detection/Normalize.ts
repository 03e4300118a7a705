/**
 * Views of a text that undo common obfuscation, each with a map from its
 * offsets back to the raw text's, so a detector can scan the view and report
 * raw ranges. Synchronous and linear in the input: one pass per view.
 */
import { codesToString } from "./Codes.js"
import { decodedViews } from "./Decode.js"
import { looksRot13, rot13View } from "./Rot13.js"
import type { Span, TextView, ViewKind } from "./Types.js"

// ---- a growable buffer of UTF-16 code units with, per unit, the raw range that produced it

class MappedBuilder {
  codes: Uint16Array
  starts: Int32Array
  ends: Int32Array
  length = 0
  constructor(capacity: number) {
    const size = Math.max(16, capacity)
    this.codes = new Uint16Array(size)
    this.starts = new Int32Array(size)
    this.ends = new Int32Array(size)
  }
  push(code: number, rawStart: number, rawEnd: number) {
    if (this.length === this.codes.length) this.grow()
    this.codes[this.length] = code
    this.starts[this.length] = rawStart
    this.ends[this.length] = rawEnd
    this.length++
  }
  private grow() {
    const size = this.codes.length * 2
    const codes = new Uint16Array(size)
    const starts = new Int32Array(size)
    const ends = new Int32Array(size)
    codes.set(this.codes)
    starts.set(this.starts)
    ends.set(this.ends)
    this.codes = codes
    this.starts = starts
    this.ends = ends
  }
  text() {
    return codesToString(this.codes, this.length)
  }
}


/** A view with per-unit raw ranges (`starts`/`ends` undefined: the view's offsets are the raw ones). */
interface MappedView extends TextView {
  readonly starts: Int32Array | undefined
  readonly ends: Int32Array | undefined
}

const mappedView = (kind: ViewKind, text: string, starts: Int32Array, ends: Int32Array, rawLength: number): MappedView => ({
  kind,
  text,
  starts,
  ends,
  toRaw: (start, end) => {
    if (start >= text.length) return { start: rawLength, end: rawLength }
    const last = Math.min(text.length, end) - 1
    return last < start ? { start: starts[start]!, end: starts[start]! } : { start: starts[start]!, end: ends[last]! }
  }
})

const identity = (start: number, end: number): Span => ({ start, end })
export const rawView = (raw: string): TextView => ({ kind: "raw", text: raw, toRaw: identity })

// ---- folding: NFKC, invisible characters, confusables

/** Zero-width characters, bidi controls, soft hyphen, word joiners, BOM: removed. */
const isInvisible = (code: number) =>
  code === 0xad ||
  code === 0x034f ||
  code === 0x061c ||
  code === 0x180e ||
  (code >= 0x200b && code <= 0x200f) ||
  (code >= 0x202a && code <= 0x202e) ||
  (code >= 0x2060 && code <= 0x2069) ||
  code === 0xfeff

const nfkcCache = new Map<number, string>()
const nfkcOf = (codePoint: number) => {
  let folded = nfkcCache.get(codePoint)
  if (folded === undefined) {
    folded = String.fromCodePoint(codePoint).normalize("NFKC")
    if (nfkcCache.size < 4096) nfkcCache.set(codePoint, folded)
  }
  return folded
}

/** Cyrillic and Greek letters drawn like Latin ones (Unicode confusables, the common part). */
const CONFUSABLES: Record<string, string> = {
  а: "a", в: "b", е: "e", ё: "e", к: "k", м: "m", н: "h", о: "o", р: "p", с: "c", т: "t", у: "y", х: "x",
  і: "i", ї: "i", ј: "j", ѕ: "s", ԁ: "d", һ: "h", ԛ: "q", ԝ: "w", ӏ: "l", ɡ: "g", ɑ: "a", ı: "i",
  А: "A", В: "B", Е: "E", К: "K", М: "M", Н: "H", О: "O", Р: "P", С: "C", Т: "T", У: "Y", Х: "X",
  І: "I", Ј: "J", Ѕ: "S", Ԛ: "Q", Ԝ: "W",
  α: "a", ο: "o", ν: "v", ρ: "p", ι: "i", κ: "k", τ: "t", υ: "u", χ: "x", ε: "e", ϲ: "c",
  Α: "A", Β: "B", Ε: "E", Ζ: "Z", Η: "H", Ι: "I", Κ: "K", Μ: "M", Ν: "N", Ο: "O", Ρ: "P", Τ: "T", Υ: "Y", Χ: "X"
}
const CONFUSABLE_CODES = new Map<number, number>(
  Object.entries(CONFUSABLES).map(([from, to]) => [from.charCodeAt(0), to.charCodeAt(0)])
)

const isAsciiLetter = (code: number) => (code | 0x20) >= 0x61 && (code | 0x20) <= 0x7a
const isLatinLetter = (code: number) => isAsciiLetter(code) || (code >= 0xc0 && code <= 0x24f && code !== 0xd7 && code !== 0xf7)
/** Letters of the scripts confusables come from (Latin, Greek, Cyrillic). */
const isFoldableLetter = (code: number) => isLatinLetter(code) || (code >= 0x370 && code <= 0x52f)

/**
 * Confusables are folded only inside a word that also has Latin letters
 * ("Ignоre" with a Cyrillic о), or that is made only of confusables and
 * stands in a domain or address ("раураl.com"); ordinary Russian or Greek
 * words ("не", "на") stay as written.
 */
const isDomainPunctuation = (code: number) => code === 0x2e || code === 0x40 || code === 0x2f

const foldConfusableWords = (built: MappedBuilder) => {
  const codes = built.codes
  let at = 0
  while (at < built.length) {
    if (!isFoldableLetter(codes[at]!)) {
      at++
      continue
    }
    let end = at
    let latin = 0
    let confusable = 0
    let other = 0
    while (end < built.length && isFoldableLetter(codes[end]!)) {
      const code = codes[end]!
      if (isLatinLetter(code)) latin++
      else if (CONFUSABLE_CODES.has(code)) confusable++
      else other++
      end++
    }
    const domainLike = (at > 0 && isDomainPunctuation(codes[at - 1]!)) || (end < built.length && isDomainPunctuation(codes[end]!))
    if (confusable > 0 && (latin > 0 || (other === 0 && domainLike))) {
      for (let i = at; i < end; i++) codes[i] = CONFUSABLE_CODES.get(codes[i]!) ?? codes[i]!
    }
    at = end
  }
}

/** The folded view: NFKC per code point, invisible characters removed, confusable words folded. */
export const foldedView = (raw: string): MappedView => {
  if (!/[^\x00-\x7f]/.test(raw)) return { kind: "folded", text: raw, toRaw: identity, starts: undefined, ends: undefined }
  const built = new MappedBuilder(raw.length + 16)
  for (let i = 0; i < raw.length; ) {
    const code = raw.charCodeAt(i)
    if (code < 0x80) {
      built.push(code, i, i + 1)
      i++
      continue
    }
    if (isInvisible(code)) {
      i++
      continue
    }
    const codePoint = raw.codePointAt(i)!
    const width = codePoint > 0xffff ? 2 : 1
    const folded = nfkcOf(codePoint)
    for (let k = 0; k < folded.length; k++) built.push(folded.charCodeAt(k), i, i + width)
    i += width
  }
  foldConfusableWords(built)
  return mappedView("folded", built.text(), built.starts.slice(0, built.length), built.ends.slice(0, built.length), raw.length)
}

// ---- deobfuscation: lower case, split words joined, leetspeak

// "|" is left alone: it is rarely a letter, and folding it would break chat-template tokens such as <|im_start|>.
const LEET: Record<string, string> = { "0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "@": "a", $: "s", "!": "i" }
const LEET_CODES = new Map<number, number>(Object.entries(LEET).map(([from, to]) => [from.charCodeAt(0), to.charCodeAt(0)]))
const isDigit = (code: number) => code >= 0x30 && code <= 0x39
/** Characters a split word is written with: letters of the Latin, Greek, Cyrillic scripts and digits. */
const isJoinable = (code: number) => isFoldableLetter(code) || isDigit(code)
/** What may stand between the letters of a split word ("i g n o r e", "i.g.n.o.r.e", "i-g-n"). */
const isSplitSeparator = (code: number) =>
  code === 0x20 || code === 0x09 || code === 0x2e || code === 0x2d || code === 0x5f || code === 0x2a || code === 0x2f || code === 0x2c || code === 0x2b || code === 0x7e || code === 0xb7
const MAX_GAP = 3
const MIN_SPLIT_LETTERS = 3
const isCombiningMark = (code: number) => code >= 0x300 && code <= 0x36f

const lowerCode = (code: number) => {
  if (code < 0x80) return code >= 0x41 && code <= 0x5a ? code + 32 : code
  if (code > 0x52f) return code
  const lower = String.fromCharCode(code).toLowerCase()
  return lower.length === 1 ? lower.charCodeAt(0) : code
}

/** Index of the end of the single joinable character at `at`, or -1 when it is not a one-character token. */
const singleTokenAt = (codes: Uint16Array, length: number, at: number) => {
  if (!isJoinable(codes[at]!)) return -1
  if (at > 0 && isJoinable(codes[at - 1]!)) return -1
  if (at + 1 < length && isJoinable(codes[at + 1]!)) return -1
  return at + 1
}

/** Appends a run of split letters joined; wider gaps than the run's usual one become a space. */
const pushJoinedRun = (from: MappedBuilder, to: MappedBuilder, letters: ReadonlyArray<number>) => {
  const gapOf = (k: number) => letters[k + 1]! - letters[k]! - 1
  let usual = MAX_GAP
  for (let k = 0; k + 1 < letters.length; k++) usual = Math.min(usual, gapOf(k))
  for (let k = 0; k < letters.length; k++) {
    const at = letters[k]!
    to.push(from.codes[at]!, from.starts[at]!, from.ends[at]!)
    if (k + 1 < letters.length) {
      const gapStart = at + 1
      const wider = gapOf(k) > usual
      const whitespaceInGap = from.codes[gapStart] === 0x20 && from.codes[letters[0]! + 1] !== 0x20
      if (wider || whitespaceInGap) to.push(0x20, from.starts[gapStart]!, from.ends[gapStart]!)
    }
  }
}

const joinSplitWords = (from: MappedBuilder): MappedBuilder => {
  const to = new MappedBuilder(from.length)
  const letters: Array<number> = []
  let at = 0
  while (at < from.length) {
    if (singleTokenAt(from.codes, from.length, at) < 0) {
      to.push(from.codes[at]!, from.starts[at]!, from.ends[at]!)
      at++
      continue
    }
    letters.length = 0
    letters.push(at)
    let next = at + 1
    for (;;) {
      let gapEnd = next
      while (gapEnd < from.length && gapEnd - next < MAX_GAP && isSplitSeparator(from.codes[gapEnd]!)) gapEnd++
      if (gapEnd === next || gapEnd >= from.length || singleTokenAt(from.codes, from.length, gapEnd) < 0) break
      letters.push(gapEnd)
      next = gapEnd + 1
    }
    if (letters.length >= MIN_SPLIT_LETTERS) {
      pushJoinedRun(from, to, letters)
      at = letters[letters.length - 1]! + 1
    } else {
      to.push(from.codes[at]!, from.starts[at]!, from.ends[at]!)
      at++
    }
  }
  return to
}

/** Leetspeak is folded inside words that have at least one ASCII letter ("h4ck3r", not "4111"). */
const foldLeetWords = (built: { readonly codes: Uint16Array; readonly length: number }) => {
  const codes = built.codes
  const isWordish = (code: number) => isAsciiLetter(code) || LEET_CODES.has(code)
  let at = 0
  while (at < built.length) {
    if (!isWordish(codes[at]!)) {
      at++
      continue
    }
    let end = at
    let letters = 0
    let leet = 0
    while (end < built.length && isWordish(codes[end]!)) {
      if (isAsciiLetter(codes[end]!)) letters++
      else leet++
      end++
    }
    if (letters > 0 && leet > 0) for (let i = at; i < end; i++) codes[i] = LEET_CODES.get(codes[i]!) ?? codes[i]!
    at = end
  }
}

/** The deobfuscated view of a folded view: lower case, combining marks dropped, split words joined, leetspeak folded. */
/** A single letter or digit, a separator, and again twice: the start of a split word. */
const SPLIT_WORD =
  /[a-z\u00c0-\u024f\u0370-\u052f](?<![a-z0-9\u00c0-\u024f\u0370-\u052f][a-z\u00c0-\u024f\u0370-\u052f])[ \t.\-_*/,+~·]{1,3}[a-z0-9\u00c0-\u024f\u0370-\u052f][ \t.\-_*/,+~·]{1,3}[a-z0-9\u00c0-\u024f\u0370-\u052f](?![a-z0-9\u00c0-\u024f\u0370-\u052f])/
const LEET_NEXT_TO_LETTER = /[a-z][0-9@$!]|[0-9@$!][a-z]/
const COMBINING_MARK = /[\u0300-\u036f]/

/**
 * The usual case, without split words or combining marks: lower case (same
 * length) and leetspeak change characters one for one, so the folded
 * view's map is the deobfuscated view's.
 */
const deobfuscatedInPlace = (folded: MappedView, rawLength: number): TextView | undefined => {
  const lowered = folded.text.toLowerCase()
  if (lowered.length !== folded.text.length || COMBINING_MARK.test(lowered) || SPLIT_WORD.test(lowered)) return undefined
  let text = lowered
  if (LEET_NEXT_TO_LETTER.test(lowered)) {
    const codes = new Uint16Array(lowered.length)
    for (let i = 0; i < lowered.length; i++) codes[i] = lowered.charCodeAt(i)
    foldLeetWords({ codes, length: codes.length })
    text = codesToString(codes, codes.length)
  }
  const { ends, starts } = folded
  if (starts === undefined || ends === undefined) return { kind: "deobfuscated", text, toRaw: identity }
  return mappedView("deobfuscated", text, starts, ends, rawLength)
}

export const deobfuscatedView = (folded: MappedView, rawLength: number): TextView => {
  const inPlace = deobfuscatedInPlace(folded, rawLength)
  if (inPlace !== undefined) return inPlace
  const text = folded.text
  const lowered = new MappedBuilder(text.length)
  const { ends, starts } = folded
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (isCombiningMark(code)) continue
    lowered.push(lowerCode(code), starts === undefined ? i : starts[i]!, ends === undefined ? i + 1 : ends[i]!)
  }
  const joined = joinSplitWords(lowered)
  foldLeetWords(joined)
  return mappedView("deobfuscated", joined.text(), joined.starts.slice(0, joined.length), joined.ends.slice(0, joined.length), rawLength)
}

// ---- all views of one text, computed once and shared by every detector

export interface TextViews {
  readonly raw: string
  readonly rawView: TextView
  readonly folded: TextView
  readonly deobfuscated: TextView
  readonly rot13: TextView
  readonly decoded: ReadonlyArray<TextView>
  /** raw, folded and the decoded views, without a view whose text repeats another's. */
  readonly literal: ReadonlyArray<TextView>
  /** Whether the text looks like it holds ROT13-encoded English (its common words, rotated). */
  readonly rot13Likely: boolean
  /**
   * raw, deobfuscated, rot13 when likely, and the decoded views (for
   * detectors of phrasing rather than of formats, whose patterns ignore
   * case: the deobfuscated view holds everything the folded one does).
   */
  readonly phrasing: ReadonlyArray<TextView>
}



const distinct = (views: ReadonlyArray<TextView>) => {
  const seen = new Set<string>()
  return views.filter((view) => (seen.has(view.text) ? false : (seen.add(view.text), true)))
}

/** Builds every view of `raw` (lazily for the costlier ones) once for all detectors. */
export const views = (raw: string): TextViews => {
  const raw_ = rawView(raw)
  const folded = foldedView(raw)
  let deobfuscated: TextView | undefined
  let rot: TextView | undefined
  let decoded: ReadonlyArray<TextView> | undefined
  let literal: ReadonlyArray<TextView> | undefined
  let phrasing: ReadonlyArray<TextView> | undefined
  let rot13Likely: boolean | undefined
  return {
    raw,
    rawView: raw_,
    folded,
    get deobfuscated() {
      return (deobfuscated ??= deobfuscatedView(folded, raw.length))
    },
    get rot13() {
      return (rot ??= rot13View(folded))
    },
    get decoded() {
      return (decoded ??= decodedViews(raw, foldedView))
    },
    get literal() {
      return (literal ??= distinct([raw_, folded, ...this.decoded]))
    },
    get rot13Likely() {
      return (rot13Likely ??= looksRot13(folded.text))
    },
    get phrasing() {
      // The deobfuscated view first: when the raw text is the same, the raw view is the one left out.
      return (phrasing ??= distinct([this.deobfuscated, raw_, ...(this.rot13Likely ? [this.rot13] : []), ...this.decoded]))
    }
  }
}

/** Accepts a raw string or views already built for it. */
export const viewsOf = (input: string | TextViews): TextViews => (typeof input === "string" ? views(input) : input)
