/**
 * A decision whose matching throws (a bug, or an engine limit such as a
 * regex's stack on a text of megabytes) fails closed: `defer` with the
 * `system:fail_closed` finding naming only the error's kind, and the error
 * handed on to be logged; before, it was thrown on, and the request answered
 * 500. The match deadline keeps its own finding.
 */
import { describe, expect, it } from "@effect/vitest"
import { decideWithin } from "../../src/authorization/DecisionAllowance.js"
import { failedClosedCause } from "../../src/authorization/Decisions.js"
import type { Decision } from "../../src/authorization/Pipeline.js"
import { checkMatchDeadline } from "../../src/catalog/MatchDeadline.js"

describe("deciding within the match deadline", () => {
  it("a matching that throws defers, fail closed, and hands the error on", () => {
    const seen: Array<unknown> = []
    const decision = decideWithin(
      1_000,
      () => {
        throw new RangeError("Maximum call stack size exceeded")
      },
      (error) => seen.push(error)
    )
    expect(decision.effect).toBe("defer")
    expect(decision.findings.map((finding) => [finding.requirement_id, finding.evidence])).toEqual([
      ["system:fail_closed", { failure: "decision_failed", error: "RangeError" }]
    ])
    expect(decision.reason).not.toContain("Maximum call stack")
    expect(seen).toHaveLength(1)
    // Counted apart in guardrail_decisions_failed_closed_total.
    expect(failedClosedCause(decision)).toBe("decision_failed")
  })

  it("a matching past the deadline defers with the deadline's finding", () => {
    const decision = decideWithin(1, (): Decision => {
      const until = Date.now() + 20
      while (Date.now() < until) checkMatchDeadline()
      throw new Error("not reached")
    })
    expect(decision.effect).toBe("defer")
    expect(decision.findings[0]!.evidence).toEqual({ failure: "decision_time_exceeded", limit_ms: 1 })
  })
})
