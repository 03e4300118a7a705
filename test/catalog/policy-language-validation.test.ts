/**
 * The policy language: parse and validate documents (every error, with its
 * path), the JSON Schema, and the examples in docs/policies.md. Compiling and
 * matching are in policy-language-compile.test.ts.
 */
import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { readFileSync } from "node:fs"
import {
  decodePolicyText,
  policyJsonSchema,
  readDocument,
  validatePolicy,
  validatePolicyText
} from "../../src/catalog/PolicyLanguage.js"
import { header, yaml } from "./policy-language-support.js"

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

  it("readDocument refuses a %YAML 1.1 directive (it changes what values mean), and takes 1.2 with or without", () => {
    // Under 1.1 the key `n` and the value `n` both read as false: the policy would say something else.
    expect(readDocument("%YAML 1.1\n---\nid: x\nn: n\n")).toEqual(
      Either.left([
        {
          path: "",
          message: "Only YAML 1.2 documents are accepted; remove the %YAML directive (it changes what values mean)"
        }
      ])
    )
    expect(readDocument("%YAML 1.2\n---\nid: x\nn: n\n")).toEqual(Either.right({ id: "x", n: "n" }))
    expect(readDocument("id: x\nn: n\n")).toEqual(Either.right({ id: "x", n: "n" }))
  })

  it("readDocument reads bytes and refuses invalid UTF-8", () => {
    expect(Either.isRight(readDocument(new TextEncoder().encode(yaml())))).toBe(true)
    expect(readDocument(new Uint8Array([0x69, 0x64, 0x3a, 0xff]))).toEqual(
      Either.left([{ path: "", message: "The document is not valid UTF-8 text" }])
    )
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
