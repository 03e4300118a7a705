/**
 * System prompt leaks: text that reproduces the given system prompt (word
 * n-grams of both, normalised the same way, overlap above a threshold or a
 * long enough verbatim run), or contains one of the given canary strings
 * (compared letters and digits only, so spacing, punctuation, case,
 * homoglyphs and zero-width characters do not hide them).
 */
import { codesToString } from "./Codes.js"
import { FindingSet, unionSpans } from "./Findings.js"
import { type TextViews, views, viewsOf } from "./Normalize.js"
import type { Finding, Span, TextView } from "./Types.js"

export interface SystemPromptLeakOptions {
  readonly system_prompt?: string
  readonly canaries?: ReadonlyArray<string>
  /** Fraction of the system prompt's n-grams reproduced that makes a leak; default 0.3. */
  readonly threshold?: number
  /** A verbatim run of this many words is a leak whatever the fraction; default 10. */
  readonly min_run_words?: number
  /** Words per n-gram; default 4. */
  readonly ngram?: number
}

interface Token {
  readonly word: string
  readonly start: number
  readonly end: number
}

/** Scripts without spaces between words (CJK, kana): each character is a word. */
const isSeparateCode = (code: number) =>
  (code >= 0x3040 && code <= 0x30ff) || (code >= 0x3400 && code <= 0x9fff) || (code >= 0xf900 && code <= 0xfaff)
const isPunctuationOrSpace = (code: number) =>
  code < 0xc0 ||
  code === 0xd7 ||
  code === 0xf7 ||
  (code >= 0x2000 && code <= 0x206f) ||
  (code >= 0x3000 && code <= 0x303f) ||
  (code >= 0xff00 && code <= 0xff65) ||
  code === 0x964 ||
  code === 0x965 ||
  code === 0x60c
const isDigitCode = (code: number) => code >= 0x30 && code <= 0x39
const isAsciiAlnum = (code: number) => isDigitCode(code) || ((code | 0x20) >= 0x61 && (code | 0x20) <= 0x7a)
const isWordCode = (code: number) =>
  code < 0x80 ? isAsciiAlnum(code) : !isPunctuationOrSpace(code) && !isSeparateCode(code)

/** Lower-case words with their view offsets; "5,000" is one word "5000". */
const tokenize = (original: string): Array<Token> => {
  const lower = original.toLowerCase()
  // Lower case that changes lengths (rare letters) is done word by word instead.
  const text = lower.length === original.length ? lower : original
  const tokens: Array<Token> = []
  let at = 0
  while (at < text.length) {
    const code = text.charCodeAt(at)
    if (isSeparateCode(code)) {
      tokens.push({ word: text[at]!, start: at, end: at + 1 })
      at++
      continue
    }
    if (!isWordCode(code)) {
      at++
      continue
    }
    let end = at
    let grouped = false
    while (end < text.length) {
      const inner = text.charCodeAt(end)
      if (
        (inner === 0x2c || inner === 0x2e) &&
        end > at &&
        isDigitCode(text.charCodeAt(end - 1)) &&
        isDigitCode(text.charCodeAt(end + 1))
      ) {
        grouped = true
        end++
        continue
      }
      if (!isWordCode(inner) || isSeparateCode(inner)) break
      end++
    }
    const word = grouped ? text.slice(at, end).replace(/[.,]/g, "") : text.slice(at, end)
    tokens.push({ word: text === lower ? word : word.toLowerCase(), start: at, end })
    at = end
  }
  return tokens
}

interface PreparedPrompt {
  readonly vocabulary: Set<string>
  readonly ngrams: Map<string, number>
  readonly total: number
  readonly n: number
}

const prepared = new Map<string, PreparedPrompt>()
const PREPARED_CACHE = 64

const prepare = (systemPrompt: string, n: number): PreparedPrompt => {
  const key = `${n}\u0000${systemPrompt}`
  const known = prepared.get(key)
  if (known !== undefined) return known
  const words = tokenize(views(systemPrompt).deobfuscated.text).map((token) => token.word)
  const size = Math.min(n, Math.max(1, words.length))
  const ngrams = new Map<string, number>()
  for (let i = 0; i + size <= words.length; i++) {
    const gram = words.slice(i, i + size).join(" ")
    if (!ngrams.has(gram)) ngrams.set(gram, ngrams.size)
  }
  const result = { vocabulary: new Set(words), ngrams, total: ngrams.size, n: size }
  if (prepared.size >= PREPARED_CACHE) prepared.delete(prepared.keys().next().value!)
  prepared.set(key, result)
  return result
}

interface Overlap {
  readonly coverage: number
  readonly longestRun: number
  readonly spans: Array<Span>
}

const overlapIn = (view: TextView, prompt: PreparedPrompt): Overlap => {
  const tokens = tokenize(view.text)
  const matched = new Set<number>()
  const spans: Array<Span> = []
  let run = 0
  let longestRun = 0
  // Consecutive words of the system prompt's vocabulary ending at each token: an n-gram is looked up only when all n are.
  let inVocabulary = 0
  for (let i = 0; i + prompt.n <= tokens.length; i++) {
    if (i === 0)
      for (let k = 0; k < prompt.n - 1; k++)
        inVocabulary = prompt.vocabulary.has(tokens[k]!.word) ? inVocabulary + 1 : 0
    inVocabulary = prompt.vocabulary.has(tokens[i + prompt.n - 1]!.word) ? inVocabulary + 1 : 0
    if (inVocabulary < prompt.n) {
      run = 0
      continue
    }
    let gram = tokens[i]!.word
    for (let k = 1; k < prompt.n; k++) gram += " " + tokens[i + k]!.word
    const index = prompt.ngrams.get(gram)
    if (index === undefined) {
      run = 0
      continue
    }
    matched.add(index)
    run = run === 0 ? prompt.n : run + 1
    longestRun = Math.max(longestRun, run)
    spans.push(view.toRaw(tokens[i]!.start, tokens[i + prompt.n - 1]!.end))
  }
  return { coverage: prompt.total === 0 ? 0 : matched.size / prompt.total, longestRun, spans }
}

/** Letters and digits only, lower case, with the raw range of each kept character. */
const compact = (view: TextView) => {
  const original = view.text
  const lower = original.toLowerCase()
  const text = lower.length === original.length ? lower : original
  const codes = new Uint16Array(text.length)
  const at = new Int32Array(text.length)
  let length = 0
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (isWordCode(code) || isSeparateCode(code)) {
      codes[length] = code
      at[length++] = i
    }
  }
  // Where lower case would change lengths (rare letters) the comparison stays case-sensitive, so offsets hold.
  return { text: codesToString(codes, length), at }
}
const MIN_COMPACT_CANARY = 6
const compactString = (value: string) => compact(views(value).folded).text

const findCanaries = (textViews: TextViews, canaries: ReadonlyArray<string>, found: FindingSet) => {
  const wanted = canaries
    .map((canary) => ({ canary, compacted: compactString(canary) }))
    .filter((c) => c.canary.length > 0)
  const canaryViews = [textViews.rawView, textViews.folded, ...textViews.decoded]
  for (const view of canaryViews) {
    const lower = view.text.toLowerCase()
    const squeezed = wanted.some((c) => c.compacted.length >= MIN_COMPACT_CANARY) ? compact(view) : undefined
    for (const { canary, compacted } of wanted) {
      const message = "canary string from the system prompt"
      for (let at = lower.indexOf(canary.toLowerCase()); at >= 0; at = lower.indexOf(canary.toLowerCase(), at + 1)) {
        found.add("canary", view.toRaw(at, at + canary.length), message, 1)
      }
      if (squeezed === undefined || compacted.length < MIN_COMPACT_CANARY) continue
      for (let at = squeezed.text.indexOf(compacted); at >= 0; at = squeezed.text.indexOf(compacted, at + 1)) {
        found.add("canary", view.toRaw(squeezed.at[at]!, squeezed.at[at + compacted.length - 1]! + 1), message, 1)
      }
    }
  }
}

export const detectSystemPromptLeak = (
  input: string | TextViews,
  options: SystemPromptLeakOptions = {}
): Array<Finding> => {
  const textViews = viewsOf(input)
  const found = new FindingSet("system_prompt_leak")
  if (options.canaries !== undefined && options.canaries.length > 0) findCanaries(textViews, options.canaries, found)
  const systemPrompt = options.system_prompt?.trim() ?? ""
  if (systemPrompt.length > 0) {
    const prompt = prepare(systemPrompt, options.ngram ?? 4)
    const threshold = options.threshold ?? 0.3
    const minRun = options.min_run_words ?? 10
    const spans: Array<Span> = []
    let best: Overlap | undefined
    for (const view of [
      textViews.deobfuscated,
      ...(textViews.rot13Likely ? [textViews.rot13] : []),
      ...textViews.decoded
    ]) {
      const overlap = overlapIn(view, prompt)
      if (overlap.coverage < threshold && overlap.longestRun < Math.min(minRun, prompt.total + prompt.n - 1)) continue
      spans.push(...overlap.spans)
      if (best === undefined || overlap.coverage > best.coverage || overlap.longestRun > best.longestRun) best = overlap
    }
    if (best !== undefined) {
      const score = Math.round(Math.max(best.coverage, Math.min(1, best.longestRun / minRun) * threshold) * 1000) / 1000
      const message = `reproduces ${Math.round(best.coverage * 100)}% of the system prompt (longest verbatim run ${best.longestRun} words)`
      found.addAll("system_prompt", unionSpans(spans), message, score)
    }
  }
  return found.result()
}
