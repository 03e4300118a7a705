/** The policy language: parse and validate documents (every error, with its path), then compile and match. */
import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { readFileSync } from "node:fs"
import type { PolicyDocument } from "../../src/catalog/Domain.js"
import {
  applyRewrite,
  compilePolicy,
  compilePolicyText,
  decodePolicyText,
  type PolicyAction,
  policyJsonSchema,
  readDocument,
  validatePolicy,
  validatePolicyText
} from "../../src/catalog/PolicyLanguage.js"

/** A valid YAML document; `extra` lines are appended, `match` lines replace the match block. */
const yaml = (options: { readonly top?: string; readonly match?: string; readonly extra?: string } = {}) =>
  [
    options.top ??
      "id: no-refund-promise\ndescription: Never promise a refund\nfamily: content\nseverity: high\naction: deny",
    "match:",
    options.match ?? "  type: literal\n  value: full refund\n  target: content",
    options.extra ?? ""
  ].join("\n")

const header = (action: string, family = "content") =>
  `id: p1\ndescription: d\nfamily: ${family}\nseverity: low\naction: ${action}`

// `errors` lists [path, message fragment] pairs; the erroneous paths must be exactly these, in any order.
const validationCases: ReadonlyArray<{
  readonly name: string
  readonly text: string
  readonly errors: ReadonlyArray<readonly [string, string]>
  readonly policyId?: string | null
}> = [
  { name: "a minimal YAML document", text: yaml(), errors: [], policyId: "no-refund-promise" },
  {
    name: "the same document as JSON text",
    text: JSON.stringify({
      id: "no-refund-promise",
      description: "Never promise a refund",
      family: "content",
      severity: "high",
      action: "deny",
      match: { type: "literal", value: "full refund", target: "content" }
    }),
    errors: [],
    policyId: "no-refund-promise"
  },
  {
    name: "a rewrite with its text",
    text: yaml({ top: header("rewrite"), extra: 'rewrite: "[removed]"' }),
    errors: []
  },
  {
    name: "any_of with a list, enabled and owner",
    text: yaml({
      match: "  type: any_of\n  value: [full refund, money back]\n  target: content\n  case_sensitive: true",
      extra: "enabled: false\nowner_agent_id: support-bot"
    }),
    errors: []
  },
  {
    name: "a safe regex on params of a tool policy",
    text: yaml({ top: header("defer", "tool"), match: "  type: regex\n  value: '\\d{4,}'\n  target: params.amount" }),
    errors: []
  },
  {
    name: "a nested params path with an index",
    text: yaml({ match: "  type: literal\n  value: x\n  target: params.recipients.0.email" }),
    errors: []
  },
  { name: "unknown extra keys (tolerated)", text: yaml({ extra: "labels: [a, b]" }), errors: [] },
  { name: "empty text", text: "  \n", errors: [["", "empty"]], policyId: null },
  { name: "only comments", text: "# nothing here\n", errors: [["", "empty"]], policyId: null },
  { name: "a top-level list", text: "- a\n- b\n", errors: [["", "mapping"]], policyId: null },
  { name: "a top-level scalar", text: "just words", errors: [["", "got a string"]], policyId: null },
  {
    name: "bad indentation (YAML syntax error with line and column)",
    text: "id: a\ndescription: d\nfamily: content\n  severity: low\n",
    errors: [["", "YAML syntax error at line 3, column 9:"]],
    policyId: null
  },
  {
    name: "a duplicate key",
    text: "id: a\nid: b\n",
    errors: [["", "YAML syntax error at line 2, column 1: Map keys must be unique"]]
  },
  {
    name: "broken JSON",
    text: '{"id": "a",\n "description": "d"\n "family": "content"}',
    errors: [["", "YAML syntax error at line 3, column 2: Missing , between flow map items"]]
  },
  {
    name: "an invalid id",
    text: yaml({ top: header("deny").replace("id: p1", "id: Bad Id!") }),
    errors: [["id", "a-z, 0-9"]],
    policyId: "Bad Id!"
  },
  {
    name: "a missing description",
    text: yaml({ top: "id: p1\nfamily: content\nseverity: low\naction: deny" }),
    errors: [["description", "missing"]]
  },
  {
    name: "an unknown family",
    text: yaml({ top: header("deny", "network") }),
    errors: [["family", '"memory", actual "network"']]
  },
  {
    name: "an unknown severity",
    text: yaml({ top: header("deny").replace("low", "urgent") }),
    errors: [["severity", '"critical", actual "urgent"']]
  },
  {
    name: "an unknown action",
    text: yaml({ top: header("block") }),
    errors: [["action", '"rewrite", actual "block"']]
  },
  {
    name: "an unknown match type",
    text: yaml({ match: "  type: glob\n  value: x\n  target: content" }),
    errors: [["match.type", 'actual "glob"']]
  },
  {
    name: "rewrite action without rewrite text",
    text: yaml({ top: header("rewrite") }),
    errors: [["rewrite", "required when action is rewrite"]]
  },
  {
    name: "rewrite action with empty text",
    text: yaml({ top: header("rewrite"), extra: 'rewrite: ""' }),
    errors: [["rewrite", "required"]]
  },
  {
    name: "a literal given a list",
    text: yaml({ match: "  type: literal\n  value: [a]\n  target: content" }),
    errors: [["match.value", "single string"]]
  },
  {
    name: "an empty literal",
    text: yaml({ match: "  type: literal\n  value: ''\n  target: content" }),
    errors: [["match.value", "must not be empty"]]
  },
  {
    name: "any_of given a string",
    text: yaml({ match: "  type: any_of\n  value: a\n  target: content" }),
    errors: [["match.value", "list of strings"]]
  },
  {
    name: "any_of with an empty list",
    text: yaml({ match: "  type: any_of\n  value: []\n  target: content" }),
    errors: [["match.value", "at least one"]]
  },
  {
    name: "any_of with an empty item",
    text: yaml({ match: "  type: any_of\n  value: [a, '']\n  target: content" }),
    errors: [["match.value", "match.value[1] must not be empty"]]
  },
  {
    name: "any_of with a number item",
    text: yaml({ match: "  type: any_of\n  value: [a, 3]\n  target: content" }),
    errors: [["match.value.1", "Expected string, actual 3"]]
  },
  {
    name: "an unknown target",
    text: yaml({ match: "  type: literal\n  value: x\n  target: body" }),
    errors: [["match.target", 'got "body"']]
  },
  {
    name: "a params target without a path",
    text: yaml({ match: "  type: literal\n  value: x\n  target: params." }),
    errors: [["match.target", "params.<path>"]]
  },
  {
    name: "a regex that does not compile",
    text: yaml({ match: "  type: regex\n  value: '(unclosed'\n  target: content" }),
    errors: [["match.value", "Unsupported regex: missing ): (unclosed"]]
  },
  {
    name: "a regex with a back-reference (RE2 cannot run it)",
    text: yaml({ match: "  type: regex\n  value: '(a)\\1'\n  target: content" }),
    errors: [["match.value", "Unsupported regex: invalid escape sequence: \\1. Policies run on RE2"]]
  },
  {
    name: "a regex with a lookahead (RE2 cannot run it)",
    text: yaml({ match: "  type: regex\n  value: 'refund(?! denied)'\n  target: content" }),
    errors: [["match.value", "back-references and lookarounds are not supported"]]
  },
  {
    name: "a regex matching empty text",
    text: yaml({ match: "  type: regex\n  value: 'x*'\n  target: content" }),
    errors: [["match.value", "empty text"]]
  },
  {
    name: "a non-boolean case_sensitive",
    text: yaml({ match: "  type: literal\n  value: x\n  target: content\n  case_sensitive: maybe" }),
    errors: [["match.case_sensitive", "Expected boolean"]]
  },
  { name: "a missing match", text: header("deny"), errors: [["match", "missing"]] },
  {
    name: "an empty owner_agent_id",
    text: yaml({ extra: 'owner_agent_id: ""' }),
    errors: [["owner_agent_id", "must not be empty"]]
  },
  {
    name: "many errors at once",
    text: "id: p1\nfamily: nope\nseverity: low\naction: rewrite\nmatch:\n  type: regex\n  value: '(?<=a)b'\n  target: headers.x\n",
    errors: [
      ["description", "missing"],
      ["family", 'actual "nope"'],
      ["rewrite", "required"],
      ["match.target", "must be content"],
      ["match.value", "invalid perl operator: (?<"]
    ],
    policyId: "p1"
  }
]

describe("validatePolicyText", () => {
  for (const { name, text, errors, policyId } of validationCases) {
    it(`${errors.length === 0 ? "accepts" : "reports"} ${name}`, () => {
      const result = validatePolicyText(text)
      expect(result.valid).toBe(errors.length === 0)
      expect([...new Set(result.errors.map((e) => e.path))].sort()).toEqual(errors.map(([path]) => path).sort())
      for (const [path, fragment] of errors) {
        expect(
          result.errors
            .filter((e) => e.path === path)
            .map((e) => e.message)
            .join(" / ")
        ).toContain(fragment)
      }
      if (policyId !== undefined) expect(result.policy_id).toBe(policyId)
    })
  }

  it("validatePolicy takes an already parsed value", () => {
    expect(validatePolicy(42)).toMatchObject({ valid: false, policy_id: null, errors: [{ path: "" }] })
    expect(validatePolicy({ id: "x" }).errors.map((e) => e.path)).toEqual(
      expect.arrayContaining(["description", "family", "severity", "action", "match"])
    )
  })

  it("decodePolicyText returns the decoded document or the same errors", () => {
    expect(Either.getOrThrow(decodePolicyText(yaml())).match).toMatchObject({ value: "full refund" })
    expect(Either.flip(decodePolicyText(yaml({ top: header("rewrite") })))).toEqual(
      Either.right([{ path: "rewrite", message: "rewrite (the replacement text) is required when action is rewrite" }])
    )
  })

  it("readDocument reads bytes and refuses invalid UTF-8", () => {
    expect(Either.isRight(readDocument(new TextEncoder().encode(yaml())))).toBe(true)
    expect(readDocument(new Uint8Array([0x69, 0x64, 0x3a, 0xff]))).toEqual(
      Either.left([{ path: "", message: "The document is not valid UTF-8 text" }])
    )
  })
})

// ---- compile and match

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

describe("policyJsonSchema", () => {
  it("is draft-07 and describes every field, tolerating extra keys", () => {
    expect(policyJsonSchema.$schema).toBe("http://json-schema.org/draft-07/schema#")
    const definition = policyJsonSchema.$defs?.["PolicyDocument"]
    expect(definition).toMatchObject({
      type: "object",
      required: ["id", "description", "family", "severity", "action", "match"],
      additionalProperties: true
    })
    expect(JSON.stringify(definition)).toContain('"enum":["permit","deny","defer","rewrite"]')
  })
})

describe("docs/policies.md", () => {
  const doc = readFileSync(new URL("../../docs/policies.md", import.meta.url), "utf8")
  const blocks = (from: string, to: string) =>
    [...doc.slice(doc.indexOf(from), doc.indexOf(to)).matchAll(/```(?:yaml|json)\n([\s\S]*?)```/g)].map((m) => m[1]!)

  it("every worked example is a valid policy", () => {
    const examples = blocks("## Examples", "## Validation errors")
    expect(examples.length).toBeGreaterThanOrEqual(6)
    for (const text of examples) expect(validatePolicyText(text)).toMatchObject({ valid: true, errors: [] })
  })

  it("the validation error example shows the real result", () => {
    const [document, result] = blocks("## Validation errors", "More examples")
    expect(validatePolicyText(document!)).toEqual(JSON.parse(result!))
  })

  it("the syntax error example shows the real first error", () => {
    const [document, error] = blocks("### YAML syntax errors", "Other examples")
    expect(validatePolicyText(document!).errors[0]).toEqual(JSON.parse(error!))
  })
})
