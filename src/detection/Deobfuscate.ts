/**
 * The deobfuscated view: the folded view in lower case, combining marks
 * dropped, letters split by spaces or punctuation joined, leetspeak folded.
 */
import { identity, MappedBuilder, type MappedView, mappedView } from "./Mapped.js"
import { codesToString, isAsciiLetter, isFoldableLetter } from "./Codes.js"
import type { TextView } from "./Types.js"

// "|" is left alone: it is rarely a letter, and folding it would break chat-template tokens such as <|im_start|>.
const LEET: Record<string, string> = {
  "0": "o",
  "1": "i",
  "3": "e",
  "4": "a",
  "5": "s",
  "7": "t",
  "@": "a",
  $: "s",
  "!": "i"
}
const LEET_CODES = new Map<number, number>(
  Object.entries(LEET).map(([from, to]) => [from.charCodeAt(0), to.charCodeAt(0)])
)
const isDigit = (code: number) => code >= 0x30 && code <= 0x39
/** Characters a split word is written with: letters of the Latin, Greek, Cyrillic scripts and digits. */
const isJoinable = (code: number) => isFoldableLetter(code) || isDigit(code)
/** What may stand between the letters of a split word ("i g n o r e", "i.g.n.o.r.e", "i-g-n"). */
const isSplitSeparator = (code: number) =>
  code === 0x20 ||
  code === 0x09 ||
  code === 0x2e ||
  code === 0x2d ||
  code === 0x5f ||
  code === 0x2a ||
  code === 0x2f ||
  code === 0x2c ||
  code === 0x2b ||
  code === 0x7e ||
  code === 0xb7
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
  if (lowered.length !== folded.text.length || COMBINING_MARK.test(lowered) || SPLIT_WORD.test(lowered))
    return undefined
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
  return mappedView(
    "deobfuscated",
    joined.text(),
    joined.starts.slice(0, joined.length),
    joined.ends.slice(0, joined.length),
    rawLength
  )
}
