/**
 * The policy language: compile documents and match them (targets, spans,
 * rewrites), and a document that skipped validation never runs. Parsing and
 * validation are in policy-language-validation.test.ts.
 */
import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import type { PolicyDocument } from "../../src/catalog/Domain.js"
import { applyRewrite, compilePolicy, compilePolicyText, type PolicyAction } from "../../src/catalog/PolicyLanguage.js"
import { compileMillisSpent } from "../../src/catalog/UserRegex.js"
import { header, yaml } from "./policy-language-support.js"

const policy = (match: PolicyDocument["match"], extra: Partial<PolicyDocument> = {}) =>
  compilePolicy({
    id: "p",
    description: "d",
    family: "content",
    severity: "high",
    action: "rewrite",
    rewrite: "[x]",
    match,
    ...extra
  })

const content = (text: string): PolicyAction => ({ operation: "reply", content: text })

const matchCases: ReadonlyArray<{
  readonly name: string
  readonly match: PolicyDocument["match"]
  readonly action: PolicyAction
  readonly found: ReadonlyArray<readonly [target: string, start: number, text: string]>
}> = [
  {
    name: "literal, case-insensitive by default",
    match: { type: "literal", value: "Full Refund", target: "content" },
    action: content("a FULL REFUND, a full refund"),
    found: [
      ["content", 2, "FULL REFUND"],
      ["content", 17, "full refund"]
    ]
  },
  {
    name: "literal with case_sensitive true ignores other cases",
    match: { type: "literal", value: "Refund", target: "content", case_sensitive: true },
    action: content("refund REFUND Refund"),
    found: [["content", 14, "Refund"]]
  },
  {
    name: "literal occurrences do not overlap",
    match: { type: "literal", value: "aa", target: "content" },
    action: content("aaaaa"),
    found: [
      ["content", 0, "aa"],
      ["content", 2, "aa"]
    ]
  },
  {
    name: "any_of finds each literal, the longest at a position",
    match: { type: "any_of", value: ["refund", "full refund", "money back"], target: "content" },
    action: content("Full refund or Money Back? refund."),
    found: [
      ["content", 0, "Full refund"],
      ["content", 15, "Money Back"],
      ["content", 27, "refund"]
    ]
  },
  {
    name: "any_of escapes regex characters in literals",
    match: { type: "any_of", value: ["a.b", "(c)"], target: "content" },
    action: content("axb a.b (c) c"),
    found: [
      ["content", 4, "a.b"],
      ["content", 8, "(c)"]
    ]
  },
  {
    name: "regex, case-insensitive by default",
    match: { type: "regex", value: "sk-[a-z0-9]{4}", target: "content" },
    action: content("keys SK-AB12 and sk-zz99"),
    found: [
      ["content", 5, "SK-AB12"],
      ["content", 17, "sk-zz99"]
    ]
  },
  {
    name: "regex with case_sensitive true",
    match: { type: "regex", value: "[A-Z]{3}", target: "content", case_sensitive: true },
    action: content("abc ABC"),
    found: [["content", 4, "ABC"]]
  },
  {
    name: "target operation",
    match: { type: "literal", value: "delete", target: "operation" },
    action: { operation: "delete_account", content: "delete" },
    found: [["operation", 0, "delete"]]
  },
  {
    name: "target params.a.b",
    match: { type: "literal", value: "evil.com", target: "params.a.b" },
    action: { operation: "send", params: { a: { b: "x@EVIL.com" }, c: "evil.com" } },
    found: [["params.a.b", 2, "EVIL.com"]]
  },
  {
    name: "target params.list.0 (an index)",
    match: { type: "literal", value: "x", target: "params.list.0" },
    action: { operation: "send", params: { list: ["xx", "x"] } },
    found: [
      ["params.list.0", 0, "x"],
      ["params.list.0", 1, "x"]
    ]
  },
  {
    name: "a list value is searched item by item, named by index",
    match: { type: "literal", value: "root", target: "params.users" },
    action: { operation: "grant", params: { users: ["alice", "root", 7, { name: "root" }] } },
    found: [["params.users.1", 0, "root"]]
  },
  {
    name: "numbers and booleans are matched as text",
    match: { type: "regex", value: "\\d{5,}", target: "params.amount" },
    action: { operation: "refund", params: { amount: 250000 } },
    found: [["params.amount", 0, "250000"]]
  },
  {
    name: "a missing param path matches nothing",
    match: { type: "literal", value: "x", target: "params.a.b" },
    action: { operation: "send", params: { a: "x" } },
    found: []
  },
  {
    name: "no content matches nothing",
    match: { type: "literal", value: "x", target: "content" },
    action: { operation: "x" },
    found: []
  },
  {
    name: "offsets stay right when lowercasing changes the text length",
    match: { type: "literal", value: "refund", target: "content" },
    action: content("İ REFUND"),
    found: [["content", 2, "REFUND"]]
  }
]

describe("compilePolicy", () => {
  for (const { name, match, action, found } of matchCases) {
    it(`matches: ${name}`, () => {
      const compiled = policy(match)
      expect(compiled.errors).toEqual([])
      expect(compiled.match(action)).toEqual(
        found.map(([target, start, text]) => ({ target, start, end: start + text.length, text }))
      )
    })
  }

  const rewriteCases: ReadonlyArray<{
    readonly name: string
    readonly policy: ReturnType<typeof policy>
    readonly input: string
    readonly output: string
  }> = [
    {
      name: "every literal match",
      policy: policy({ type: "literal", value: "refund", target: "content" }),
      input: "Refund? refund!",
      output: "[x]? [x]!"
    },
    {
      name: "regex matches, with $ taken literally",
      policy: policy({ type: "regex", value: "\\d{4}", target: "content" }, { rewrite: "$1" }),
      input: "card 1234 5678 end",
      output: "card $1 $1 end"
    },
    {
      name: "any_of matches left to right",
      policy: policy({ type: "any_of", value: ["full refund", "money back"], target: "content" }),
      input: "money back or a full refund",
      output: "[x] or a [x]"
    },
    {
      name: "nothing when nothing matches",
      policy: policy({ type: "literal", value: "zzz", target: "content" }),
      input: "clean text",
      output: "clean text"
    },
    {
      name: "nothing without rewrite text",
      policy: compilePolicy({
        id: "p",
        description: "d",
        family: "content",
        severity: "low",
        action: "deny",
        match: { type: "literal", value: "a", target: "content" }
      }),
      input: "a a",
      output: "a a"
    }
  ]
  for (const c of rewriteCases) {
    it(`applyRewrite replaces ${c.name}`, () => {
      expect(applyRewrite(c.policy, c.input)).toBe(c.output)
    })
  }

  it("exposes the document's fields", () => {
    const compiled = Either.getOrThrow(
      compilePolicyText(yaml({ top: header("rewrite"), extra: "rewrite: '[r]'\nowner_agent_id: bot" }))
    )
    expect(compiled).toMatchObject({
      id: "p1",
      action: "rewrite",
      severity: "low",
      family: "content",
      description: "d",
      ownerAgentId: "bot",
      rewrite: "[r]",
      targets: ["content"],
      errors: []
    })
    expect(Either.getOrThrow(compilePolicyText(yaml()))).toMatchObject({ ownerAgentId: null, rewrite: null })
  })

  it("never runs a document that skipped validation; it reports why instead", () => {
    const unsupported = policy({ type: "regex", value: "(a)\\1", target: "content" })
    expect(unsupported.errors[0]).toMatchObject({ path: "match.value" })
    expect(unsupported.match(content("aa"))).toEqual([])
    expect(Either.isLeft(compilePolicyText(yaml({ top: header("rewrite") })))).toBe(true)
  })
})

describe("literal policies and the compiled-pattern cache", () => {
  it("literal policies compile no RE2 pattern until a text needs one, leaving the shared cache to regexes", () => {
    // Read by compile time, not by the cache's size: other files in this process may have filled the cache.
    const before = compileMillisSpent()
    const literals = Array.from({ length: 50 }, (_, i) =>
      policy({ type: "literal", value: `cache phrase ${i}`, target: "content" })
    )
    expect(literals.flatMap((compiled) => compiled.errors)).toEqual([])
    expect(literals[7]!.match(content("a CACHE PHRASE 7 here"))).toEqual([
      { target: "content", start: 2, end: 16, text: "CACHE PHRASE 7" }
    ])
    expect(compileMillisSpent()).toBe(before)
    // A text whose lowercasing changes its length needs the regex: compiled then, once.
    const needed = content("İ CACHE PHRASE 3")
    expect(literals[3]!.match(needed)).toEqual([{ target: "content", start: 2, end: 16, text: "CACHE PHRASE 3" }])
    const compiledOnce = compileMillisSpent()
    expect(compiledOnce).toBeGreaterThan(before)
    expect(literals[3]!.match(needed)).toHaveLength(1)
    expect(compileMillisSpent()).toBe(compiledOnce)
  })
})
