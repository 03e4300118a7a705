/**
 * How a compiled policy finds its matches in one value: literals with `indexOf`, lists of
 * literals and regexes on RE2 (`UserRegex.ts`), each bounded to `MAX_POLICY_MATCHES`.
 */
import { Either } from "effect"
import type { DetectorName } from "../detection/index.js"
import type { SimpleMatch } from "./MatchSchemas.js"
import { compileUserRegex, literalsPattern, type UserRegex } from "./UserRegex.js"

export interface PolicyMatch {
  /** Where the text was found: `content`, `operation`, `params.a.b`, or `params.list.0` for list items. */
  readonly target: string
  /** UTF-16 offsets into the matched value. */
  readonly start: number
  readonly end: number
  readonly text: string
  /** Detector matches: which detector, what it found, and its score where it scores. */
  readonly detector?: DetectorName
  readonly category?: string
  readonly score?: number
}

/** The parts of a proposed action a policy can look at (compatible with `ProposedAction`). */
export interface PolicyAction {
  readonly operation: string
  readonly content?: string | undefined
  readonly params?: unknown
}

/**
 * At most this many matches are collected per policy and action: enough evidence, and it bounds
 * the work (each further match rescans the rest of the text). A rewrite policy with more matches
 * than this denies instead of rewriting only some of them.
 */
export const MAX_POLICY_MATCHES = 100

/** Appends the matches of one value to `out` (up to one past the cap); built once per policy. */
export type Finder = (text: string, target: string, out: Array<PolicyMatch>) => void

export const findNothing: Finder = () => undefined

const regexFinder =
  (regex: UserRegex): Finder =>
  (text, target, out) => {
    if (out.length > MAX_POLICY_MATCHES) return
    const ran = regex.scan(text, ({ start, end }) => {
      out.push({ target, start, end, text: text.slice(start, end) })
      return out.length <= MAX_POLICY_MATCHES
    })
    // The engine failed twice (heap exhausted): fail closed, as if the whole value matched.
    if (!ran) out.push({ target, start: 0, end: text.length, text })
  }

/** A finder for any of the literals (escaped), on the same engine as regexes. */
const literalsFinder = (literals: ReadonlyArray<string>, caseSensitive: boolean): Either.Either<Finder, string> =>
  Either.map(compileUserRegex(literalsPattern(literals), { caseSensitive }), regexFinder)

/**
 * The lowercased text, remembered for the last text seen: the many case-insensitive policies
 * checked against one action's content then lowercase it once instead of once per policy.
 */
const lowered = { text: "", lower: "" }
const toLower = (text: string): string => {
  if (text !== lowered.text) {
    lowered.text = text
    lowered.lower = text.toLowerCase()
  }
  return lowered.lower
}

/**
 * Substring search with `indexOf` on a pre-lowercased needle (unless case-sensitive). Lowercasing can
 * change lengths (e.g. "İ"), so offsets would drift: such texts use a regex, compiled on first need
 * only, so literal policies leave the shared compiled-pattern cache (UserRegex.ts) to the regexes.
 */
const literalFinder = (literal: string, caseSensitive: boolean): Finder => {
  if (literal === "") return findNothing // validation refuses it; indexOf("") would never advance
  const needle = caseSensitive ? literal : literal.toLowerCase()
  let compiled: Finder | undefined
  const fallback: Finder = (text, target, out) => {
    compiled ??= Either.getOrElse(literalsFinder([literal], caseSensitive), () => findNothing)
    compiled(text, target, out)
  }
  if (needle.length !== literal.length) return fallback
  return (text, target, out) => {
    const haystack = caseSensitive ? text : toLower(text)
    if (haystack.length !== text.length) return fallback(text, target, out)
    for (
      let i = haystack.indexOf(needle);
      i !== -1 && out.length <= MAX_POLICY_MATCHES;
      i = haystack.indexOf(needle, i + needle.length)
    ) {
      out.push({ target, start: i, end: i + needle.length, text: text.slice(i, i + needle.length) })
    }
  }
}

/** The parts of a simple match that say how it runs. */
export type MatchRule = Pick<SimpleMatch, "type" | "value" | "case_sensitive">

/**
 * The pattern a simple match compiles on RE2 and keeps in the shared cache: a regex, or an `any_of`
 * list of two or more; none for a literal (and a one-item list), which runs on `indexOf`.
 */
export const enginePatternOf = (
  match: MatchRule
): { readonly source: string; readonly caseSensitive: boolean } | undefined => {
  const caseSensitive = match.case_sensitive === true
  const values = typeof match.value === "string" ? [match.value] : match.value
  if (match.type === "regex") return { source: values[0] ?? "", caseSensitive }
  if (match.type === "any_of" && values.length > 1) return { source: literalsPattern(values), caseSensitive }
  return undefined
}

export const makeFinder = (match: SimpleMatch): Either.Either<Finder, string> => {
  const pattern = enginePatternOf(match)
  if (pattern !== undefined) {
    return Either.map(compileUserRegex(pattern.source, { caseSensitive: pattern.caseSensitive }), regexFinder)
  }
  const literal = typeof match.value === "string" ? match.value : (match.value[0] ?? "")
  return Either.right(literalFinder(literal, match.case_sensitive === true))
}
