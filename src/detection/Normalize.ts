/**
 * Views of a text that undo common obfuscation, each with a map from its
 * offsets back to the raw text's, so a detector can scan the view and report
 * raw ranges. Synchronous and linear in the input: one pass per view.
 */
import { isFoldableLetter, isLatinLetter } from "./Codes.js"
import { decodedViews } from "./Decode.js"
import { deobfuscatedView } from "./Deobfuscate.js"
import { identity, MappedBuilder, type MappedView, mappedView } from "./Mapped.js"
import { looksRot13, rot13View } from "./Rot13.js"
import type { TextView } from "./Types.js"

export const rawView = (raw: string): TextView => ({ kind: "raw", text: raw, toRaw: identity })

// ---- folding: NFKC, invisible characters, confusables

/** Zero-width characters, bidi controls, soft hyphen, word joiners, variation selectors, BOM: removed. */
const isInvisible = (code: number) =>
  code === 0xad ||
  code === 0x034f ||
  code === 0x061c ||
  code === 0x180e ||
  (code >= 0x200b && code <= 0x200f) ||
  (code >= 0x202a && code <= 0x202e) ||
  (code >= 0x2060 && code <= 0x2069) ||
  (code >= 0xfe00 && code <= 0xfe0f) ||
  code === 0xfeff

/** Variation selectors 17-256 (U+E0100-U+E01EF), astral: removed like the others (Decode.ts reads what they hide). */
const isAstralInvisible = (codePoint: number) => codePoint >= 0xe0100 && codePoint <= 0xe01ef

/**
 * Tag characters (U+E0000-U+E007F): U+E0020-U+E007E mirror printable ASCII and are invisible, so text
 * written in them ("ASCII smuggling") reaches a model unseen. The folded view reads them as that ASCII,
 * set apart as its own words; the others (language tag, cancel tag) are removed.
 */
const TAG_BASE = 0xe0000
const isTag = (codePoint: number) => codePoint >= TAG_BASE && codePoint <= 0xe007f
const isPrintableTag = (codePoint: number) => codePoint >= 0xe0020 && codePoint <= 0xe007e
const SPACE = 0x20

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
const CONFUSABLE_FROM = "авеёкмнорстухіїјѕԁһԛԝӏɡɑıАВЕКМНОРСТУХІЈЅԚԜαονρικτυχεϲΑΒΕΖΗΙΚΜΝΟΡΤΥΧ"
const CONFUSABLE_TO = "abeekmhopctyxiijsdhqwlgaiABEKMHOPCTYXIJSQWaovpiktuxecABEZHIKMNOPTYX"
const CONFUSABLE_CODES = new Map<number, number>(
  Array.from(CONFUSABLE_FROM, (_, i) => [CONFUSABLE_FROM.charCodeAt(i), CONFUSABLE_TO.charCodeAt(i)])
)

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
    const domainLike =
      (at > 0 && isDomainPunctuation(codes[at - 1]!)) || (end < built.length && isDomainPunctuation(codes[end]!))
    if (confusable > 0 && (latin > 0 || (other === 0 && domainLike))) {
      for (let i = at; i < end; i++) codes[i] = CONFUSABLE_CODES.get(codes[i]!) ?? codes[i]!
    }
    at = end
  }
}

/** The folded view: NFKC per code point, invisible characters removed, confusable words folded. */
export const foldedView = (raw: string): MappedView => {
  if (!/[^\x00-\x7f]/.test(raw))
    return { kind: "folded", text: raw, toRaw: identity, starts: undefined, ends: undefined }
  const built = new MappedBuilder(raw.length + 16)
  // Where the current run of tag characters ends so far (-1: none): its text stands apart from its neighbours'.
  let tagRunEnd = -1
  const apart = (rawStart: number, rawEnd: number) => {
    if (built.length > 0 && built.codes[built.length - 1] !== SPACE) built.push(SPACE, rawStart, rawEnd)
  }
  for (let i = 0; i < raw.length;) {
    const code = raw.charCodeAt(i)
    const codePoint = code < 0xd800 ? code : raw.codePointAt(i)!
    const width = codePoint > 0xffff ? 2 : 1
    if (isTag(codePoint)) {
      if (tagRunEnd < 0) apart(i, i + width)
      if (isPrintableTag(codePoint)) built.push(codePoint - TAG_BASE, i, i + width)
      tagRunEnd = i + width
      i += width
      continue
    }
    if (tagRunEnd >= 0) {
      if (code > SPACE) apart(tagRunEnd - 2, tagRunEnd)
      tagRunEnd = -1
    }
    if (code < 0x80) {
      built.push(code, i, i + 1)
      i++
      continue
    }
    if (isInvisible(code) || isAstralInvisible(codePoint)) {
      i += width
      continue
    }
    const folded = nfkcOf(codePoint)
    for (let k = 0; k < folded.length; k++) built.push(folded.charCodeAt(k), i, i + width)
    i += width
  }
  foldConfusableWords(built)
  return mappedView(
    "folded",
    built.text(),
    built.starts.slice(0, built.length),
    built.ends.slice(0, built.length),
    raw.length
  )
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
      return (phrasing ??= distinct([
        this.deobfuscated,
        raw_,
        ...(this.rot13Likely ? [this.rot13] : []),
        ...this.decoded
      ]))
    }
  }
}

/** Accepts a raw string or views already built for it. */
export const viewsOf = (input: string | TextViews): TextViews => (typeof input === "string" ? views(input) : input)
