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
 * freed at once. If the heap still runs out, every cached pattern is freed and the match retried.
 */
import { Either } from "effect"
import { RE2 } from "re2-wasm"

/** Which engine holds a compiled pattern; tests assert it. There is only the linear-time one. */
export type RegexEngine = "re2"

/** Patterns longer than this are refused: policy regexes are short, and RE2's program grows with them. */
export const MAX_PATTERN_LENGTH = 2000
/** A text longer than this (UTF-16 units) runs on a throwaway compiled copy, freed right after. */
export const LARGE_TEXT_UNITS = 16 * 1024
/** A cached compiled pattern is recompiled after scanning this much text, releasing its DFA cache. */
export const RECYCLE_AFTER_UNITS = 256 * 1024
const MAX_CACHED = 512

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
  readonly match: (input: string, start: number, captures: boolean) => { readonly match: string; readonly index: number }
  readonly delete: () => void
}
const wrapped = (re: RE2): Wrapped => (re as unknown as { readonly wrapper: Wrapped }).wrapper

const flagsOf = (caseSensitive: boolean) => (caseSensitive ? "u" : "iu")

const compileRaw = (source: string, caseSensitive: boolean): Wrapped => wrapped(new RE2(source, flagsOf(caseSensitive)))

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

/** Frees every cached pattern (their DFA caches are most of the heap); they recompile on next use. */
const freeAll = () => {
  for (const held of cache.values()) free(held)
}

const SURROGATE = /[\uD800-\uDFFF]/

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
    const base = from === 0 ? 0 : from - (from >= 2 && SURROGATE.test(text[from - 1]!) ? 2 : 1)
    const window = base === 0 ? text : text.slice(base)
    const astral = SURROGATE.test(window)
    const result = engine.match(window, base === 0 ? 0 : 1, false)
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
  if (held === undefined) {
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

const runOnce = (key: string, source: string, caseSensitive: boolean, text: string, found: (m: RegexMatch) => boolean) => {
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
  const key = `${flagsOf(caseSensitive)}/${source}`
  return {
    engine: "re2",
    source,
    caseSensitive,
    scan: (text, found) => {
      // A full wasm heap frees every cached pattern; the match is tried once more on the emptied heap.
      for (let attempt = 0; attempt < 2; attempt++) {
        try {
          runOnce(key, source, caseSensitive, text, found)
          return true
        } catch (error) {
          if (!isEngineFailure(error)) throw error
          freeAll()
        }
      }
      return false
    }
  }
}

const reasonOf = (error: unknown) =>
  (error instanceof Error ? error.message : String(error)).replace(/^Invalid regular expression: \/.*\/[a-z]*: /s, "")

/**
 * Compiles a user's pattern on RE2, or says why it cannot run there. Compiling once here also
 * warms the cache for the first match.
 */
export const compileUserRegex = (source: string, options: { readonly caseSensitive: boolean }): Either.Either<UserRegex, string> => {
  if (source.length > MAX_PATTERN_LENGTH) return Either.left(`pattern is longer than ${MAX_PATTERN_LENGTH} characters`)
  const key = `${flagsOf(options.caseSensitive)}/${source}`
  if (!cache.has(key)) {
    try {
      heldFor(key, source, options.caseSensitive)
    } catch (error) {
      cache.delete(key)
      if (isEngineFailure(error)) freeAll()
      return Either.left(reasonOf(error))
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
