/**
 * The one place a user-supplied pattern (a policy regex, or literals a user listed) is compiled
 * and run. Everything runs on RE2 (`re2-wasm`), whose automata match in time linear in the text:
 * no pattern, however written, can backtrack catastrophically. RE2 cannot run back-references or
 * lookarounds; compiling such a pattern fails with RE2's reason.
 *
 * re2-wasm has a fixed 16 MiB heap (no growth), never frees a compiled pattern on its own, and
 * each pattern's DFA cache grows with the text it scans. So compiled patterns are cached (the hot
 * path never recompiles), freed when evicted, recompiled after scanning `RECYCLE_AFTER_UNITS`
 * (which releases their DFA cache), and texts above `LARGE_TEXT_UNITS` run on a throwaway copy
 * freed at once. If the heap still runs out, the wasm instance aborts, and an aborted instance never
 * gets the aborted call's memory back: it is replaced by a fresh one (see `replaceEngine`), and the
 * compile or match is tried once more there.
 *
 * A compile near the expansion bound stalls the main thread for up to ~220 ms (docs/BENCHMARKS.md), so
 * what keeps recompiles rare is that the patterns in use fit the cache: each workspace's stored policies
 * use at most MAX_REGEX_PATTERNS_PER_WORKSPACE distinct patterns (PolicyLimits.ts; literals stay out of
 * the cache), so one workspace cannot cycle the cache by itself, and at the default (128) four
 * workspaces at their limit fit together. Past that, evicted patterns recompile on their next use.
 */
import { Either } from "effect"
import { createRequire } from "node:module"
import type { RE2 } from "re2-wasm"
import { MAX_COMPILED_PATTERNS } from "../platform/Config.js"
import { checkMatchDeadline } from "./MatchDeadline.js"
import { expansionOf, MAX_EXPANSION } from "./RegexExpansion.js"

/** Which engine holds a compiled pattern; tests assert it. There is only the linear-time one. */
export type RegexEngine = "re2"

/** Patterns longer than this are refused: policy regexes are short, and RE2's program grows with them. */
export const MAX_PATTERN_LENGTH = 2000
/** A text longer than this (UTF-16 units) runs on a throwaway compiled copy, freed right after. */
export const LARGE_TEXT_UNITS = 16 * 1024
/** A cached compiled pattern is recompiled after scanning this much text, releasing its DFA cache. */
export const RECYCLE_AFTER_UNITS = 256 * 1024
/** Compiled patterns kept, process-wide; a workspace may use at most MAX_REGEX_PATTERNS_PER_WORKSPACE of them. */
export const MAX_CACHED = MAX_COMPILED_PATTERNS

export interface RegexMatch {
  /** UTF-16 offsets into the text. */
  readonly start: number
  readonly end: number
}

export interface UserRegex {
  readonly engine: RegexEngine
  readonly source: string
  readonly caseSensitive: boolean
  /**
   * Calls `found` for each match, left to right, non-overlapping, until `found` returns false.
   * Returns false when the engine failed twice (heap exhausted): callers then fail closed.
   */
  readonly scan: (text: string, found: (match: RegexMatch) => boolean) => boolean
}

/** The fields re2-wasm keeps private but that must be reached: freeing, and matching without captures. */
interface Wrapped {
  readonly match: (
    /** UTF-8 bytes: embind copies them as they are, where a string would be encoded by a slow JS loop. */
    input: Uint8Array,
    start: number,
    captures: boolean
  ) => { readonly match: string; readonly index: number }
  readonly delete: () => void
}
const wrapped = (re: RE2): Wrapped => (re as unknown as { readonly wrapper: Wrapped }).wrapper

const flagsOf = (caseSensitive: boolean) => (caseSensitive ? "u" : "iu")

/** What the cache holds a compiled pattern under: two policies with the same key share one compile. */
export const patternKey = (source: string, caseSensitive: boolean) => `${flagsOf(caseSensitive)}/${source}`

const requireEngine = createRequire(import.meta.url)
/** re2-wasm's wrapper and its emscripten instance: loaded anew, they are a fresh wasm instance with a fresh heap. */
const engineModules = [requireEngine.resolve("re2-wasm"), requireEngine.resolve("re2-wasm/build/wasm/re2.js")]
const loadEngine = (): typeof RE2 => {
  for (const id of engineModules) delete requireEngine.cache[id]
  return (requireEngine("re2-wasm") as { readonly RE2: typeof RE2 }).RE2
}
let Engine = loadEngine()
let engineReplacements = 0

/** How many compiled patterns the cache holds now (for tests and diagnostics). */
export const cachedRegexCount = () => cache.size

/** How many times an aborted engine was replaced in this process (for tests and diagnostics). */
export const regexEngineReplacements = () => engineReplacements

let compileMillis = 0

/** Milliseconds spent compiling since start-up, on this thread: CompileAllowance charges a request's share. */
export const compileMillisSpent = () => compileMillis

const compileRaw = (source: string, caseSensitive: boolean): Wrapped => {
  const started = performance.now()
  try {
    return wrapped(new Engine(source, flagsOf(caseSensitive)))
  } finally {
    compileMillis += performance.now() - started
  }
}

/** A compiled pattern held for reuse, with how much text it scanned since it was compiled. */
interface Held {
  current: Wrapped | null
  scanned: number
}

const cache = new Map<string, Held>()

const free = (held: Held) => {
  held.current?.delete()
  held.current = null
}

/**
 * After an abort (heap exhausted) the instance keeps what the aborted call allocated, for good: a few
 * oversized patterns would leave every policy regex failing closed. Every cached pattern lives in that
 * heap, so all are dropped with it (unfreed: the instance goes as a whole) and recompile on next use.
 */
const replaceEngine = () => {
  cache.clear()
  Engine = loadEngine()
  engineReplacements += 1
}

const SURROGATE = /[\uD800-\uDFFF]/

const encoder = new TextEncoder()
let lastText: string | undefined
let lastBytes = new Uint8Array(0)
/**
 * The text as UTF-8, encoded once for every pattern that scans it (a decision's policies scan one text
 * after another). RE2 gets the same bytes embind would make of the string, about five times faster for
 * a long text (docs/BENCHMARKS.md, "The heaviest decision").
 */
const utf8Of = (text: string) => {
  if (text !== lastText) {
    lastText = text
    lastBytes = encoder.encode(text)
  }
  return lastBytes
}

/** RE2 reports offsets in code points; converts one back to UTF-16 units within `text`. */
const utf16Offset = (text: string, codePoints: number, astral: boolean): number => {
  if (!astral) return codePoints
  let units = 0
  for (let seen = 0; seen < codePoints && units < text.length; seen++) {
    units += (text.codePointAt(units) ?? 0) > 0xffff ? 2 : 1
  }
  return units
}

/**
 * All matches of one compiled pattern in `text`. Each search after the first passes the rest of
 * the text from one character before the previous match's end and starts at 1, so `\b` and `^`
 * see the same context as in the whole text, and RE2 never walks the text from its beginning.
 */
const scanWith = (engine: Wrapped, text: string, found: (match: RegexMatch) => boolean): void => {
  let from = 0 // UTF-16 offset of the next search
  while (from <= text.length) {
    checkMatchDeadline()
    const base = from === 0 ? 0 : from - (from >= 2 && SURROGATE.test(text[from - 1]!) ? 2 : 1)
    const window = base === 0 ? text : text.slice(base)
    const astral = SURROGATE.test(window)
    const result = engine.match(utf8Of(window), base === 0 ? 0 : 1, false)
    if (result.index < 0) return
    const start = base + utf16Offset(window, result.index, astral)
    const end = start + result.match.length
    if (start < from) return // never happens with well-formed text; guarantees the loop advances
    if (end === start) {
      // An empty match would not advance; validation refuses such patterns, this is a backstop.
      from = end + ((text.codePointAt(end) ?? 0) > 0xffff ? 2 : 1)
      continue
    }
    if (!found({ start, end })) return
    from = end
  }
}

/** re2-wasm aborts with a `WebAssembly.RuntimeError` when its heap runs out. */
const isEngineFailure = (error: unknown) => error instanceof Error && error.name === "RuntimeError"

const heldFor = (key: string, source: string, caseSensitive: boolean): Held => {
  let held = cache.get(key)
  if (held !== undefined) {
    // Least recently used goes first: patterns the decisions use stay while one-off ones (dry runs) come and go.
    cache.delete(key)
    cache.set(key, held)
  } else {
    if (cache.size >= MAX_CACHED) {
      const oldest = cache.keys().next().value
      if (oldest !== undefined) {
        free(cache.get(oldest)!)
        cache.delete(oldest)
      }
    }
    held = { current: null, scanned: 0 }
    cache.set(key, held)
  }
  if (held.current === null || held.scanned > RECYCLE_AFTER_UNITS) {
    free(held)
    held.current = compileRaw(source, caseSensitive)
    held.scanned = 0
  }
  return held
}

const runOnce = (
  key: string,
  source: string,
  caseSensitive: boolean,
  text: string,
  found: (m: RegexMatch) => boolean
) => {
  if (text.length > LARGE_TEXT_UNITS) {
    const throwaway = compileRaw(source, caseSensitive)
    try {
      scanWith(throwaway, text, found)
    } finally {
      throwaway.delete()
    }
    return
  }
  const held = heldFor(key, source, caseSensitive)
  held.scanned += text.length
  scanWith(held.current!, text, found)
}

const makeUserRegex = (source: string, caseSensitive: boolean): UserRegex => {
  const key = patternKey(source, caseSensitive)
  return {
    engine: "re2",
    source,
    caseSensitive,
    scan: (text, found) => {
      // An aborted engine is replaced, and the match tried once more on the fresh one.
      for (let attempt = 0; attempt < 2; attempt++) {
        try {
          runOnce(key, source, caseSensitive, text, found)
          return true
        } catch (error) {
          if (!isEngineFailure(error)) throw error
          replaceEngine()
        }
      }
      return false
    }
  }
}

const TOO_LARGE =
  "pattern expands too far for the regex engine: use smaller counted repeats, or fewer Unicode property classes (\\p{...}) inside them"

const reasonOf = (error: unknown) =>
  isEngineFailure(error)
    ? TOO_LARGE
    : (error instanceof Error ? error.message : String(error)).replace(
        /^Invalid regular expression: \/.*\/[a-z]*: /s,
        ""
      )

/** Why `source` is refused before compiling (too long, expands too far), or undefined. */
const refusedUncompiled = (source: string) =>
  source.length > MAX_PATTERN_LENGTH
    ? `pattern is longer than ${MAX_PATTERN_LENGTH} characters`
    : expansionOf(source) > MAX_EXPANSION
      ? TOO_LARGE
      : undefined

/** Verdicts of checked patterns (text only, no engine memory), so re-validating stored documents compiles nothing twice. */
const MAX_VERDICTS = 4096
const verdicts = new Map<string, string | undefined>()

/**
 * Why a user's pattern cannot run on RE2, or undefined. It is compiled once and freed at once: checking
 * patterns (validation, `POST /v1/policies/validate`) takes no slot of the cache the policies in use share.
 * The verdict is kept: every snapshot build validates the workspace's stored documents again.
 */
export const regexProblem = (source: string, options: { readonly caseSensitive: boolean }): string | undefined => {
  const key = patternKey(source, options.caseSensitive)
  if (verdicts.has(key)) return verdicts.get(key)
  const verdict = checkPattern(source, options.caseSensitive)
  if (verdicts.size >= MAX_VERDICTS) verdicts.delete(verdicts.keys().next().value!)
  verdicts.set(key, verdict)
  return verdict
}

const checkPattern = (source: string, caseSensitive: boolean): string | undefined => {
  const refused = refusedUncompiled(source)
  if (refused !== undefined) return refused
  // A pattern that aborts a fresh engine too is refused; either abort replaces the engine it broke.
  for (let attempt = 0; ; attempt++) {
    try {
      compileRaw(source, caseSensitive).delete()
      return undefined
    } catch (error) {
      if (!isEngineFailure(error)) return reasonOf(error)
      replaceEngine()
      if (attempt > 0) return reasonOf(error)
    }
  }
}

/**
 * Compiles a user's pattern on RE2 into the cache, or says why it cannot run there. Compiling once here
 * also warms the cache for the first match.
 */
export const compileUserRegex = (
  source: string,
  options: { readonly caseSensitive: boolean }
): Either.Either<UserRegex, string> => {
  const refused = refusedUncompiled(source)
  if (refused !== undefined) return Either.left(refused)
  const key = patternKey(source, options.caseSensitive)
  // A pattern that aborts a fresh engine too is refused; either abort replaces the engine it broke.
  for (let attempt = 0; !cache.has(key); attempt++) {
    try {
      heldFor(key, source, options.caseSensitive)
    } catch (error) {
      cache.delete(key)
      if (!isEngineFailure(error)) return Either.left(reasonOf(error))
      replaceEngine()
      if (attempt > 0) return Either.left(reasonOf(error))
    }
  }
  return Either.right(makeUserRegex(source, options.caseSensitive))
}

/** Escapes a literal so it matches itself, in RE2 and JavaScript syntax alike. */
export const escapeRegex = (literal: string): string => literal.replace(/[\\^$.*+?()[\]{}|/]/g, "\\$&")

/** A pattern matching any of the literals, longest first so `full refund` wins over `refund`. */
export const literalsPattern = (literals: ReadonlyArray<string>): string =>
  [...literals]
    .sort((a, b) => b.length - a.length)
    .map(escapeRegex)
    .join("|")

/** Whether the pattern has at least one match in the text; an engine failure counts as a match (fail closed). */
export const matchesAnywhere = (regex: UserRegex, text: string): boolean => {
  let found = false
  const ran = regex.scan(text, () => {
    found = true
    return false
  })
  return found || !ran
}
