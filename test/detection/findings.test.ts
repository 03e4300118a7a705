/**
 * How a detector folds its matches into findings (src/detection/Findings.ts): the same thing seen in
 * several views is one finding, and the work per match does not grow with the matches before it. A text at
 * the content cap can hold tens of thousands of phone-shaped digit groups; each match used to be compared
 * with every finding before it, holding the API thread for seconds on one event.
 */
import { describe, expect, it } from "@effect/vitest"
import { FindingSet } from "../../src/detection/Findings.js"
import type { Span } from "../../src/detection/Types.js"

/** A span that counts how often it is read: the work spent on it. */
const countedSpan = (start: number, end: number, reads: { count: number }): Span => ({
  get start() {
    reads.count++
    return start
  },
  get end() {
    reads.count++
    return end
  }
})

describe("findings of a detector", () => {
  it("separate matches are separate findings; each is read a bounded number of times, however many came before", () => {
    const reads = { count: 0 }
    const found = new FindingSet("pii")
    const matches = 4_000
    for (let i = 0; i < matches; i++) found.add("phone", countedSpan(i * 3, i * 3 + 2, reads), "phone number")
    expect(found.size).toBe(matches)
    expect(reads.count).toBeLessThan(matches * 12)
  })

  it("a match seen again, or overlapping one, joins its finding; another category is its own", () => {
    const found = new FindingSet("pii")
    found.add("phone", { start: 10, end: 20 }, "phone number")
    found.add("email", { start: 40, end: 50 }, "e-mail address")
    found.add("phone", { start: 10, end: 20 }, "phone number")
    found.add("phone", { start: 15, end: 25 }, "phone number")
    found.add("email", { start: 12, end: 18 }, "e-mail address")
    found.add("phone", { start: 0, end: 5 }, "phone number")
    found.add("phone", { start: 4, end: 11 }, "phone number")
    expect(found.result().map(({ category, spans }) => [category, spans])).toEqual([
      ["phone", [{ start: 4, end: 25 }]],
      ["email", [{ start: 40, end: 50 }]],
      ["email", [{ start: 12, end: 18 }]],
      ["phone", [{ start: 0, end: 5 }]]
    ])
  })

  it("a scored match keeps the highest score of what it joins", () => {
    const found = new FindingSet("system_prompt_leak")
    found.add("canary", { start: 0, end: 8 }, "canary", 0.5)
    found.add("canary", { start: 0, end: 8 }, "canary", 0.9)
    found.add("canary", { start: 2, end: 10 }, "canary", 0.7)
    expect(found.result()).toEqual([
      {
        detector: "system_prompt_leak",
        category: "canary",
        score: 0.9,
        spans: [{ start: 0, end: 10 }],
        message: "canary"
      }
    ])
  })
})
