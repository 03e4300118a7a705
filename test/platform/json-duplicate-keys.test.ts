/**
 * The duplicate-key rule of every JSON body (src/platform/Json.ts): a key
 * named twice in one object is found wherever it is, strings that look like
 * keys are not keys, and bodies of megabytes (one long string, or one made
 * of escapes) are read without failing: a regex over them overflowed V8's
 * backtracking stack, and the request answered 500.
 */
import { describe, expect, it } from "@effect/vitest"
import { hasDuplicateKeys } from "../../src/platform/Json.js"

const check = (text: string) => hasDuplicateKeys(text, JSON.parse(text))

describe("duplicate keys in JSON text", () => {
  it("finds a key named twice in any object, escapes and spacing included", () => {
    expect(check('{"a":1,"a":2}')).toBe(true)
    expect(check('{"a":{"b":1,"b":1}}')).toBe(true)
    expect(check('[{"ok":1},{"x":1,"x" \n : 2}]')).toBe(true)
    expect(check('{"a\\"b":1,"a\\"b":2}')).toBe(true)
    expect(check('{"":1,"":2}')).toBe(true)
  })

  it("counts no string value as a key, and the same key in two objects is no duplicate", () => {
    expect(check('{"a":1,"b":{"a":2}}')).toBe(false)
    expect(check('{"a":"x\\":","b":[{"c":1},{"c":2}]}')).toBe(false)
    expect(check('{"a\\\\":1,"b":"\\\\"}')).toBe(false)
    expect(check('["a", "b:", {"k": "v:"}]')).toBe(false)
  })

  it("reads bodies of megabytes: one long string, or one of escapes", () => {
    expect(check(JSON.stringify({ content: "A".repeat(12_000_000), name: "x" }))).toBe(false)
    expect(check(JSON.stringify({ content: '\\"\n'.repeat(1_000_000) }))).toBe(false)
    expect(check(`{"content":${JSON.stringify("B".repeat(12_000_000))},"content":1}`)).toBe(true)
  })
})
