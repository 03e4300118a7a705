/** Composite, detector and normalised matches of compiled policies, and rewriting by merged spans. */
import { describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"
import { PolicyDocument } from "../../src/catalog/Domain.js"
import { applyRewrite, compilePolicy, mergeSpans, type PolicyAction } from "../../src/catalog/PolicyLanguage.js"
import { viewsFor } from "../../src/catalog/PolicyMatching.js"

const compile = (match: unknown, extra: object = {}) =>
  compilePolicy(
    Schema.decodeUnknownSync(PolicyDocument)({
      id: "p",
      description: "d",
      family: "content",
      severity: "high",
      action: "rewrite",
      rewrite: "[x]",
      match,
      ...extra
    })
  )

const literal = (value: string, target = "content", extra: object = {}) => ({
  type: "literal",
  value,
  target,
  ...extra
})
const content = (text: string): PolicyAction => ({ operation: "reply", content: text })

describe("composites", () => {
  it("not holds with no spans; a double not holds when the leaf matches, still without spans", () => {
    const not = compile(literal("x"), {}).evaluate(content("abc"))
    expect(not).toBeNull()
    const negated = compile({ not: literal("x") }, { action: "deny", rewrite: undefined })
    expect(negated.evaluate(content("abc"))).toEqual([])
    expect(negated.evaluate(content("x"))).toBeNull()
    const twice = compile({ not: { not: literal("x") } }, { action: "deny", rewrite: undefined })
    expect(twice.evaluate(content("x"))).toEqual([])
    expect(twice.evaluate(content("y"))).toBeNull()
  })

  it("all stops at the first child that fails; any keeps every matching child's spans", () => {
    const all = compile({ all: [literal("a"), literal("b")] })
    expect(all.evaluate(content("a only"))).toBeNull()
    expect(all.match(content("b then a")).map((m) => [m.start, m.text])).toEqual([
      [7, "a"],
      [0, "b"]
    ])
    const any = compile({ any: [literal("a"), literal("zz"), literal("b")] })
    expect(any.match(content("b a")).map((m) => m.start)).toEqual([2, 0])
  })

  it("leaves read their own targets; targets lists them once", () => {
    const policy = compile({ all: [literal("pay", "operation"), literal("x", "params.to"), literal("x", "params.to")] })
    expect(policy.targets).toEqual(["operation", "params.to"])
    expect(policy.evaluate({ operation: "pay", params: { to: "x" } })?.map((m) => m.target)).toEqual([
      "operation",
      "params.to",
      "params.to"
    ])
    expect(policy.evaluate({ operation: "pay", content: "x" })).toBeNull()
  })

  it("a composite rewrites only its content leaves, and only while the others still match", () => {
    const policy = compile({ all: [literal("secret"), literal("send", "operation")] })
    const action: PolicyAction = { operation: "send", content: "a secret" }
    expect(applyRewrite(policy, "a secret, another secret", action)).toBe("a [x], another [x]")
    expect(applyRewrite(policy, "a secret", { operation: "reply", content: "a secret" })).toBe("a secret")
  })

  it("a single leaf keeps rewriting the content whatever its target", () => {
    expect(applyRewrite(compile(literal("x", "operation")), "x and x")).toBe("[x] and [x]")
  })
})

describe("spans and rewrite", () => {
  it("mergeSpans merges overlapping and adjacent ranges", () => {
    expect(
      mergeSpans([
        { start: 5, end: 8 },
        { start: 0, end: 2 },
        { start: 2, end: 3 },
        { start: 6, end: 10 }
      ])
    ).toEqual([
      { start: 0, end: 3 },
      { start: 5, end: 10 }
    ])
  })

  it("adjacent literal matches are replaced once", () => {
    expect(applyRewrite(compile(literal("aa")), "aaaa b")).toBe("[x] b")
  })

  it("normalize maps hits in every view to raw ranges, once each", () => {
    const policy = compile(literal("refund", "content", { normalize: true }))
    const text = "REFUND, r e f u n d, ｒｅｆｕｎｄ, refund"
    expect(policy.match(content(text)).map((m) => m.text)).toEqual(["REFUND", "r e f u n d", "ｒｅｆｕｎｄ", "refund"])
    expect(
      compile(literal("refund"))
        .match(content(text))
        .map((m) => m.text)
    ).toEqual(["REFUND", "refund"])
  })

  it("the views of a text are built once and shared", () => {
    const text = `shared ${Math.random()}`
    expect(viewsFor(text)).toBe(viewsFor(text))
  })
})

describe("detectors", () => {
  it("system_prompt_leak needs the agent's prompt or canaries", () => {
    const policy = compile({ type: "detector", detector: "system_prompt_leak", target: "content" }, { action: "deny" })
    const action = content("the code is CANARY-12345678")
    expect(policy.evaluate(action)).toBeNull()
    expect(policy.evaluate(action, { system_prompt: null })).toBeNull()
    expect(policy.evaluate(action, { system_prompt: null, canaries: ["CANARY-12345678"] })).toEqual([
      {
        target: "content",
        start: 12,
        end: 27,
        text: "CANARY-12345678",
        detector: "system_prompt_leak",
        category: "canary",
        score: 1
      }
    ])
  })

  it("url allow lists report every other domain", () => {
    const policy = compile({ type: "detector", detector: "url", allow: ["example.com"], target: "content" })
    expect(policy.match(content("see docs.example.com and other.io")).map((m) => [m.text, m.category])).toEqual([
      ["other.io", "unlisted_domain"]
    ])
  })
})
