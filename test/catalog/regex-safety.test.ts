/**
 * User-supplied patterns: every classic catastrophic-backtracking shape either compiles on the
 * linear-time engine (RE2) or is refused with a reason; none runs on a backtracking engine.
 */
import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { regexMatchesEmpty } from "../../src/catalog/RegexSafety.js"
import {
  cachedRegexCount,
  compileMillisSpent,
  compileUserRegex,
  MAX_CACHED,
  matchesAnywhere,
  regexEngineReplacements,
  regexProblem
} from "../../src/catalog/UserRegex.js"

// `refused` is a fragment of the expected reason; null means the pattern compiles on RE2.
const catastrophic: ReadonlyArray<{ readonly pattern: string; readonly refused: string | null }> = [
  // nested quantifiers
  { pattern: String.raw`^(a+)+$`, refused: null },
  { pattern: String.raw`(a*)*b`, refused: null },
  { pattern: String.raw`([a-zA-Z]+)*$`, refused: null },
  { pattern: String.raw`(\d+)*$`, refused: null },
  { pattern: String.raw`(?:ab*)+c`, refused: null },
  { pattern: String.raw`(a+){2,}b`, refused: null },
  { pattern: String.raw`(.*a){20}`, refused: null },
  { pattern: String.raw`(a?){25}a{25}`, refused: null },
  { pattern: String.raw`((ab)+c)*d`, refused: null },
  { pattern: String.raw`(\w+\s?)+$`, refused: null },
  // overlapping alternations
  { pattern: String.raw`(a|a)*b`, refused: null },
  { pattern: String.raw`(a|aa)+$`, refused: null },
  { pattern: String.raw`(a|ab)*c`, refused: null },
  { pattern: String.raw`(?:\d|[0-5])+x`, refused: null },
  { pattern: String.raw`(.|\s)*z`, refused: null },
  // dot-star chains (the issue's example) and adjacent repeats
  { pattern: String.raw`.*a.*a.*a.*b`, refused: null },
  { pattern: String.raw`.*x.*x.*x.*y`, refused: null },
  { pattern: String.raw`\d+\d*\d+x`, refused: null },
  // email- and URL-style patterns known for ReDoS
  {
    pattern: String.raw`^([a-zA-Z0-9])(([\-.]|[_]+)?([a-zA-Z0-9]+))*(@){1}[a-z0-9]+[.]{1}(([a-z]{2,3})|([a-z]{2,3}[.]{1}[a-z]{2,3}))$`,
    refused: null
  },
  { pattern: String.raw`^[\w.+-]+@([\w-]+\.)+[\w-]{2,}$`, refused: null },
  { pattern: String.raw`^(https?://)?([\da-z.-]+)\.([a-z.]{2,6})([/\w .-]*)*/?$`, refused: null },
  // DFA blow-up shape (large automaton; RE2 bounds its memory and stays linear)
  { pattern: String.raw`[a-q][^u-z]{13}x`, refused: null },
  // what RE2 cannot run: refused
  { pattern: String.raw`(a)\1`, refused: "invalid escape sequence: \\1" },
  { pattern: String.raw`(?<q>['"]).*\k<q>`, refused: "invalid escape sequence: \\k" },
  { pattern: String.raw`foo(?=bar)`, refused: "invalid perl operator: (?=" },
  { pattern: String.raw`(?!foo)bar`, refused: "invalid perl operator: (?!" },
  { pattern: String.raw`(?<=\$)\d+`, refused: "invalid perl operator: (?<" },
  { pattern: String.raw`(?<!no )refund`, refused: "invalid perl operator: (?<" },
  { pattern: String.raw`a{1,1001}`, refused: "invalid repetition size" },
  { pattern: String.raw`((((a{100}){100}){100}){100})`, refused: "expands too far" },
  { pattern: "a".repeat(2001), refused: "longer than 2000" },
  { pattern: String.raw`(abc`, refused: "missing )" },
  // expansion: what would take RE2 seconds to compile or run its heap out is refused before compiling
  { pattern: String.raw`\p{L}{1000}`, refused: "expands too far" },
  { pattern: String.raw`(?:\p{L}|\p{N}){1000}x`, refused: "expands too far" },
  { pattern: String.raw`(?i)\p{Greek}{999}`, refused: "expands too far" },
  { pattern: `(?:${String.raw`[\p{L}\p{N}]`.repeat(150)})`, refused: "expands too far" },
  { pattern: String.raw`(?:\S{10}){1000}`, refused: "expands too far" },
  // and what stays within it runs
  { pattern: String.raw`\p{L}{10}`, refused: null },
  { pattern: String.raw`[\p{L}\p{N}]+@[\p{L}\p{N}]+\.[a-z]{2,24}`, refused: null },
  { pattern: String.raw`.{1000}.{1000}`, refused: null },
  { pattern: String.raw`(?:abcdefghij){1000}`, refused: null },
  { pattern: String.raw`\x{1F600}{5}`, refused: null }
]

describe("compileUserRegex", () => {
  it("the table has at least 15 classic catastrophic patterns", () => {
    expect(catastrophic.filter((c) => c.refused === null).length).toBeGreaterThanOrEqual(15)
  })

  for (const { pattern, refused } of catastrophic) {
    const shown = pattern.length > 60 ? `${pattern.slice(0, 60)}...` : pattern
    it(`${refused === null ? "runs on RE2" : "refuses"} ${shown}`, () => {
      const compiled = compileUserRegex(pattern, { caseSensitive: false })
      if (refused === null) {
        expect(Either.map(compiled, (regex) => regex.engine)).toEqual(Either.right("re2"))
      } else {
        expect(Either.isLeft(compiled) ? compiled.left : "compiled").toContain(refused)
      }
    })
  }

  it("a heap run out by many large patterns gets a fresh engine: earlier patterns still match, new ones compile", () => {
    const ssn = Either.getOrThrow(compileUserRegex(String.raw`\b\d{3}-\d{2}-\d{4}\b`, { caseSensitive: true }))
    const before = regexEngineReplacements()
    // Each compiles alone (about a megabyte of program); together they outgrow re2-wasm's 16 MiB heap.
    for (let index = 0; index < 100 && regexEngineReplacements() === before; index++) {
      expect(Either.isRight(compileUserRegex(`.{1000}.{1000}x${index}`, { caseSensitive: true }))).toBe(true)
    }
    expect(regexEngineReplacements()).toBe(before + 1)
    expect(matchesAnywhere(ssn, "Your parcel ships tomorrow.")).toBe(false)
    expect(matchesAnywhere(ssn, "SSN 123-45-6789 on file")).toBe(true)
    expect(Either.isRight(compileUserRegex("refund", { caseSensitive: false }))).toBe(true)
  })

  it("matches the issue's pattern against adversarial text and still finds a real match", () => {
    const regex = Either.getOrThrow(compileUserRegex(".*a.*a.*a.*b", { caseSensitive: false }))
    expect(matchesAnywhere(regex, "a".repeat(100_000))).toBe(false)
    expect(matchesAnywhere(regex, "a".repeat(100_000) + "B")).toBe(true)
  })

  it("reports UTF-16 offsets, keeps word-boundary context between matches, and honours case", () => {
    const collect = (pattern: string, text: string, caseSensitive = false) => {
      const found: Array<[number, number]> = []
      Either.getOrThrow(compileUserRegex(pattern, { caseSensitive })).scan(text, ({ start, end }) => {
        found.push([start, end])
        return true
      })
      return found
    }
    expect(collect("é+b", "xx😀éééb aéb")).toEqual([
      [4, 8],
      [10, 12]
    ])
    expect(collect(String.raw`\bfoo`, "xfoo foo foofoo")).toEqual([
      [5, 8],
      [9, 12]
    ])
    expect(collect("^a", "aaa")).toEqual([[0, 1]])
    expect(collect("ÉCOLE", "école École")).toEqual([
      [0, 5],
      [6, 11]
    ])
    expect(collect("ÉCOLE", "école École", true)).toEqual([])
  })
})

describe("regexProblem", () => {
  it("checks a pattern without taking a slot of the shared cache, with the reasons compiling gives", () => {
    const before = cachedRegexCount()
    for (let i = 0; i < 50; i++)
      expect(regexProblem(`check-only-${i}-[a-z]+`, { caseSensitive: false })).toBeUndefined()
    expect(cachedRegexCount()).toBe(before)
    for (const bad of ["(a)\\1", "(?=a)b", "\\p{L}{1000}"]) {
      const compiled = compileUserRegex(bad, { caseSensitive: true })
      expect(Either.isLeft(compiled), bad).toBe(true)
      expect(regexProblem(bad, { caseSensitive: true }), bad).toBe(Either.isLeft(compiled) ? compiled.left : "")
    }
  })
})

describe("the compiled-pattern cache", () => {
  it("keeps a pattern in use while more one-off patterns than it holds pass through", () => {
    const hot = Either.getOrThrow(compileUserRegex("hot-[0-9]{4}", { caseSensitive: true }))
    let hotCompileMillis = 0
    for (let i = 0; i < MAX_CACHED + 8; i++) {
      const oneOff = Either.getOrThrow(compileUserRegex(`one-off-${i}-[a-z]{3}`, { caseSensitive: true }))
      expect(matchesAnywhere(oneOff, `one-off-${i}-abc`)).toBe(true)
      const before = compileMillisSpent()
      expect(matchesAnywhere(hot, "order hot-1234")).toBe(true)
      hotCompileMillis += compileMillisSpent() - before
    }
    // Least recently used goes first: the pattern in use never left, so matching it never compiled again.
    expect(hotCompileMillis).toBe(0)
    expect(cachedRegexCount()).toBe(MAX_CACHED)
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
