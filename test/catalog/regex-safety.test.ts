/** The static regex safety check: table-driven over classic evil patterns and everyday ones. */
import { describe, expect, it } from "@effect/vitest"
import { checkRegexSafety, regexMatchesEmpty } from "../../src/catalog/RegexSafety.js"

// `refused` is a fragment of the expected reason; null means the pattern is safe.
const cases: ReadonlyArray<{ readonly pattern: string; readonly refused: string | null }> = [
  // classic catastrophic backtracking
  { pattern: String.raw`^(a+)+$`, refused: "nested quantifier (a+)+" },
  { pattern: String.raw`(a|aa)+`, refused: 'repeated alternation (a|aa)+ has branches that can both start with "a"' },
  { pattern: String.raw`(.*a){20}`, refused: "nested quantifier (.*a){20}" },
  { pattern: String.raw`([a-zA-Z]+)*`, refused: "nested quantifier ([a-zA-Z]+)*" },
  { pattern: String.raw`(\d+)*$`, refused: "nested quantifier (\\d+)*" },
  { pattern: String.raw`(a*)*`, refused: "nested quantifier" },
  { pattern: String.raw`(?:ab*)+`, refused: "nested quantifier (?:ab*)+" },
  { pattern: String.raw`(a+){2,}`, refused: "nested quantifier (a+){2,}" },
  { pattern: String.raw`(a?){25}a{25}`, refused: "nested quantifier (a?){25}" },
  { pattern: String.raw`((ab)+c)*`, refused: "nested quantifier" },
  { pattern: String.raw`(\w+\s?)+$`, refused: "nested quantifier" },
  { pattern: String.raw`(a|a)*`, refused: "repeated alternation" },
  { pattern: String.raw`(a|ab)*`, refused: "repeated alternation" },
  { pattern: String.raw`(?:[A-Z]|x)+`, refused: 'both start with "X"' },
  { pattern: String.raw`(?:\d|[0-5])+`, refused: "repeated alternation" },
  { pattern: String.raw`(a|)+`, refused: "matches empty text" },
  { pattern: String.raw`.*.*=.*`, refused: "adjacent repeats .*.*" },
  { pattern: String.raw`\d+\d*`, refused: "adjacent repeats" },
  // RE2 does not support these; they need backtracking
  { pattern: String.raw`(a)\1`, refused: "backreference \\1" },
  { pattern: String.raw`(?<q>['"]).*\k<q>`, refused: "backreference \\k<...>" },
  { pattern: String.raw`foo(?=bar)`, refused: "lookahead" },
  { pattern: String.raw`(?!foo)bar`, refused: "lookahead" },
  { pattern: String.raw`(?<=\$)\d+`, refused: "lookbehind" },
  { pattern: String.raw`(?<!no )refund`, refused: "lookbehind" },
  // oversized counts
  { pattern: String.raw`a{1,1001}`, refused: "exceeds 1000" },
  { pattern: String.raw`x{5000}`, refused: "exceeds 1000" },
  { pattern: String.raw`\d{1001,}`, refused: "exceeds 1000" },
  // malformed patterns are refused rather than guessed at
  { pattern: String.raw`(abc`, refused: "unterminated group" },
  { pattern: String.raw`abc)`, refused: 'unbalanced ")"' },
  { pattern: String.raw`[abc`, refused: "unterminated character class" },
  // everyday patterns
  { pattern: String.raw`\b\d{4}[- ]?\d{4}[- ]?\d{4}[- ]?\d{4}\b`, refused: null },
  { pattern: String.raw`^[A-Z]{2}\d{2}[A-Z0-9]{10,30}$`, refused: null },
  { pattern: "full refund|money back", refused: null },
  { pattern: String.raw`(?:foo|bar)baz`, refused: null },
  { pattern: String.raw`[a-z]+@[a-z]+\.com`, refused: null },
  { pattern: String.raw`(?:foo|bar)+`, refused: null },
  { pattern: String.raw`(?:\d{4}){3}`, refused: null },
  { pattern: String.raw`(?<year>\d{4})-(?<month>\d{2})`, refused: null },
  { pattern: String.raw`\$\d+(?:\.\d{2})?`, refused: null },
  { pattern: String.raw`[^@\s]+@[^@\s]+`, refused: null },
  { pattern: String.raw`\bsk-[A-Za-z0-9]{20,}\b`, refused: null },
  { pattern: String.raw`\p{Lu}+ refund`, refused: null },
  { pattern: String.raw`[\]\\(]+x`, refused: null },
  { pattern: String.raw`a{1000}`, refused: null },
  { pattern: String.raw`https?://\S+`, refused: null }
]

describe("checkRegexSafety", () => {
  for (const { pattern, refused } of cases) {
    it(`${refused === null ? "accepts" : "refuses"} ${pattern}`, () => {
      const result = checkRegexSafety(pattern)
      if (refused === null) {
        expect(result).toEqual({ safe: true })
      } else {
        expect(result.safe).toBe(false)
        expect(result.safe ? "" : result.reason).toContain(refused)
      }
    })
  }

  it("every accepted pattern also compiles as a JavaScript u-mode regex", () => {
    for (const { pattern } of cases.filter((c) => c.refused === null)) {
      expect(() => new RegExp(pattern, "iu")).not.toThrow()
    }
  })

  it("refuses overlong patterns and deep nesting without blowing the stack", () => {
    expect(checkRegexSafety("a".repeat(2001)).safe).toBe(false)
    expect(checkRegexSafety("(".repeat(5000) + ")".repeat(5000)).safe).toBe(false)
  })
})

describe("regexMatchesEmpty", () => {
  const table: ReadonlyArray<readonly [string, boolean]> = [
    ["a*", true],
    [String.raw`\b`, true],
    ["x|", true],
    ["(?:ab)?", true],
    ["a+", false],
    [String.raw`\d{4}`, false],
    ["^refund$", false],
    ["(?:a|b)c*", false]
  ]
  for (const [pattern, empty] of table) {
    it(`${pattern} ${empty ? "can" : "cannot"} match empty text`, () => {
      expect(regexMatchesEmpty(pattern)).toBe(empty)
    })
  }
})
