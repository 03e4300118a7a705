/**
 * The run-counters scenario shared by the database-log and Kafka suites:
 * decisions tied to a run (deny, rewrite, escalation, ...) reach the run's
 * counters through the `decisions` topic and the run-counters consumer.
 */
import { expect } from "@effect/vitest"
import { Effect } from "effect"
import { tenant } from "../support/Tenants.js"
import { createAgent, createPolicy, createRun, propose, reply } from "../support/Events.js"
import { getRun } from "./runs-helpers.js"
import { until } from "../support/Eventually.js"

const AGENT = "support-bot"

/** PostgreSQL's percentile_disc(0.95): the first value whose cumulative share reaches 95 %. */
export const p95 = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted.length === 0 ? 0 : sorted[Math.max(0, Math.ceil(0.95 * sorted.length) - 1)]!
}

/** A run's p95 comes from its latency sketch: never below the exact percentile, at most 10 % + 1 ms above. */
export const expectNearP95 = (reported: number, exact: number) => {
  expect(reported).toBeGreaterThanOrEqual(exact)
  expect(reported).toBeLessThanOrEqual(Math.ceil(exact * 1.1) + 1)
}

export const runCountersScenario = (base: string) =>
  Effect.gen(function* () {
    const owner = yield* tenant(base)
    yield* createAgent(base, owner, AGENT)
    yield* createPolicy(base, owner, "no-passwords", { value: "password" })
    const run = yield* createRun(base, owner, { agent_id: AGENT, kind: "chat_session" })
    const other = yield* createRun(base, owner, { agent_id: AGENT, kind: "chat_session" })

    const effects: Array<[string, string]> = []
    const tied = (content: string) =>
      Effect.map(propose(base, owner, AGENT, reply(content), { run_id: run.id }), (decision) => {
        effects.push([decision.effect, String(decision.status)])
        return decision
      })
    yield* tied("I promise a full refund.") // deny (profile)
    yield* tied("Tell me your password.") // deny (policy)
    yield* tied("That is a stupid idea.") // rewrite (tone)
    yield* tied("Let me get our lawyer.") // defer, escalated
    yield* tied("Here is some legal advice.") // defer, not escalated
    yield* tied("Your order ships tomorrow.") // permit
    expect(effects).toEqual([
      ["deny", "decided"],
      ["deny", "decided"],
      ["rewrite", "decided"],
      ["defer", "escalated"],
      ["defer", "decided"],
      ["permit", "decided"]
    ])
    // Decisions of another run, of no run, and another workspace naming this run's id count nowhere here.
    yield* propose(base, owner, AGENT, reply("I promise a full refund."), { run_id: other.id })
    yield* propose(base, owner, AGENT, reply("I promise a full refund."))
    const stranger = yield* tenant(base)
    yield* propose(base, stranger, AGENT, reply("I promise a full refund."), { run_id: run.id })

    const { traces } = yield* owner.api.runs.listRunTraces({ path: { id: run.id }, urlParams: {} })
    expect(traces).toHaveLength(6)
    const expectedP95 = p95(traces.map((trace) => trace.elapsed_ms))

    const settled = yield* until(
      Effect.map(getRun(base, owner, run.id), (detail) => {
        expect(detail.run).toMatchObject({
          trace_count: 6,
          blocked_count: 2,
          rewritten_count: 1,
          escalated_count: 1
        })
        expect(detail.run.p95_latency_ms).toBeGreaterThan(0)
        expectNearP95(detail.run.p95_latency_ms, expectedP95)
        return detail.run
      }),
      "30 seconds"
    )
    const otherRun = yield* until(
      Effect.map(getRun(base, owner, other.id), (detail) => {
        expect(detail.run).toMatchObject({ trace_count: 1, blocked_count: 1, rewritten_count: 0, escalated_count: 0 })
        return detail.run
      }),
      "30 seconds"
    )

    // Applied once: a while later nothing has been counted twice, and the list shows the same counters.
    yield* Effect.sleep("500 millis")
    const later = (yield* getRun(base, owner, run.id)).run
    expect(later).toMatchObject({
      trace_count: 6,
      blocked_count: 2,
      rewritten_count: 1,
      escalated_count: 1,
      p95_latency_ms: settled.p95_latency_ms
    })
    const listed = (yield* owner.api.runs.listRuns({ urlParams: {} })).runs
    expect(listed.find((item) => item.id === run.id)).toMatchObject({ trace_count: 6, blocked_count: 2 })
    expect(listed.find((item) => item.id === other.id)).toMatchObject({ trace_count: otherRun.trace_count })
    return { owner, run: later }
  })
