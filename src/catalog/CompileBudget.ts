/**
 * The RE2 patterns a policy `match` compiles, and how much compiling one request may ask for.
 *
 * Compiling runs on the main thread (re2-wasm): up to ~220 ms for a pattern at the expansion bound,
 * tens of ms for an ordinary one (docs/BENCHMARKS.md). A document with hundreds of distinct regexes
 * therefore stalled every workspace's decisions for tens of seconds. Each distinct pattern costs
 * PATTERN_BASE_COST plus its estimated expansion, and the documents of one request (a create, a PUT,
 * a validation, a dry run's or an impact replay's candidates) together stay within
 * REQUEST_COMPILE_BUDGET, about a second of compiling: past it the request is 400 before anything
 * compiles (docs/policies.md#compile-budget). Stored documents are not measured again.
 */
import { MAX_MATCH_CHILDREN, MAX_MATCH_DEPTH } from "./MatchSchemas.js"
import { enginePatternOf, type MatchRule } from "./PolicyFinders.js"
import { isFields, type PolicyError } from "./PolicyMatchValidation.js"
import { expansionOf, MAX_EXPANSION } from "./RegexExpansion.js"
import { MAX_PATTERN_LENGTH, patternKey } from "./UserRegex.js"

/** The fixed part of a compile, in expansion units (an ordinary pattern compiles in ~40 ms). */
export const PATTERN_BASE_COST = 2_000
/** What one request's documents may compile together: about a second on this machine. */
export const REQUEST_COMPILE_BUDGET = 40_000

const SIMPLE_TYPES: ReadonlyArray<unknown> = ["literal", "regex", "any_of"]

const isMatchRule = (node: { readonly [key: string]: unknown }): node is MatchRule =>
  SIMPLE_TYPES.includes(node["type"]) &&
  (typeof node["value"] === "string" ||
    (Array.isArray(node["value"]) && node["value"].every((item) => typeof item === "string")))

/**
 * Adds the RE2 patterns `match` compiles (its leaves under all/any/not, as far as validation reads a
 * document) to `patterns`, by cache key.
 */
export const collectPatterns = (node: unknown, patterns: Map<string, string>, depth = 0): void => {
  if (!isFields(node) || depth > MAX_MATCH_DEPTH) return
  for (const children of [node["all"], node["any"]]) {
    if (Array.isArray(children)) {
      for (const child of children.slice(0, MAX_MATCH_CHILDREN)) collectPatterns(child, patterns, depth + 1)
    }
  }
  if (node["not"] !== undefined) collectPatterns(node["not"], patterns, depth + 1)
  if (!isMatchRule(node)) return
  const pattern = enginePatternOf(node)
  if (pattern !== undefined) patterns.set(patternKey(pattern.source, pattern.caseSensitive), pattern.source)
}

/** A pattern refused before compiling (too long, expands too far) costs nothing: it is never compiled. */
const costOf = (source: string) => {
  if (source.length > MAX_PATTERN_LENGTH) return 0
  const expansion = expansionOf(source)
  return expansion > MAX_EXPANSION ? 0 : PATTERN_BASE_COST + expansion
}

/** The error at `path` when the `match`es of one request compile more than it may, else none. */
export const compileBudgetErrors = (matches: ReadonlyArray<unknown>, path: string): Array<PolicyError> => {
  const patterns = new Map<string, string>()
  for (const match of matches) collectPatterns(match, patterns)
  let cost = 0
  for (const source of patterns.values()) cost += costOf(source)
  if (cost <= REQUEST_COMPILE_BUDGET) return []
  return [
    {
      path,
      message:
        `these regexes would cost ${cost} compile units, and one request may compile at most ${REQUEST_COMPILE_BUDGET} ` +
        `(each distinct regex or any_of list counts ${PATTERN_BASE_COST} plus its estimated expansion); ` +
        "use fewer distinct patterns or smaller counted repeats, or send the documents in separate requests"
    }
  ]
}
