/**
 * The decision allowance (src/authorization/DecisionAllowance.ts, docs/limits.md): a decision whose
 * matching holds the API thread for long is a debt of its workspace; past the allowance, the
 * workspace's next decisions fail closed (`defer`, `system:fail_closed`, naming the setting) without
 * matching, while other workspaces' decisions are matched as before. Before, a workspace at its
 * policy and regex limits could send decisions at the content cap back to back, each holding the
 * thread for about a second, and every other workspace's decisions waited.
 *
 * The payback is set tiny here (1 ms per second), so the workspace's heavy decisions (over 32 regexes
 * at the content cap, far longer than 25 ms each on any machine) run up the 2 s burst within a few dozen.
 *
 * And no one decision holds the thread past DECISION_MATCH_MS: set to 10 ms in the second suite, a
 * heavy decision stops matching and defers, even though its text ends with what a policy denies; an
 * impact replay decides it under the same limit, so it agrees with what was recorded.
 *
 * Many workspaces together: with DECISION_MS_PER_SECOND tiny, one workspace's heavy decisions run up
 * the service's debt; then the workspaces whose decisions were charged lately defer, while one without
 * recent heavy decisions is matched (until its own heavy decision is charged).
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { BURST_MS, CHARGED_ABOVE_MS } from "../../src/authorization/DecisionAllowance.js"
import { aroundNow, replay } from "../impact/impact-helpers.js"
import { createAgent, createPolicy, eventBody, reply } from "../support/Events.js"
import { sample, scrape } from "../support/Metrics.js"
import { call } from "../support/Raw.js"
import { type Tenant, tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"

const AGENT = "heavy-bot"
const METRICS_TOKEN = "decision-allowance-metrics-token-0123456789"
const REGEXES = 32
/** More heavy decisions than any machine needs to pass BURST_MS (2 s) at over 25 ms each. */
const MAX_HEAVY = Math.ceil(BURST_MS / CHARGED_ABOVE_MS) + 1
/** Benign text at the default content cap (262,144 bytes): no policy matches it. */
const AT_CAP = "The order ships tomorrow and arrives by Friday. ".repeat(5462).slice(0, 262_144)

interface DecisionBody {
  readonly effect: string
  readonly findings: ReadonlyArray<{ readonly requirement_id: string | null; readonly reason: string }>
}

const decide = (base: string, owner: Tenant, content: string) =>
  Effect.map(
    call(base, "POST", "/v1/events", { token: owner.jwt, body: eventBody(owner, AGENT, reply(content)) }),
    (answer) => {
      expect(answer.status, answer.text.slice(0, 500)).toBe(200)
      return answer.body as DecisionBody
    }
  )

/** Heavy decisions (matched, permit) until one defers, which it answers; at least one is matched first. */
const heavyUntilDeferred = (base: string, owner: Tenant) =>
  Effect.gen(function* () {
    let heavyDecisions = 0
    let last = yield* decide(base, owner, AT_CAP)
    while (last.effect === "permit" && heavyDecisions < MAX_HEAVY) {
      heavyDecisions++
      last = yield* decide(base, owner, AT_CAP)
    }
    expect(heavyDecisions).toBeGreaterThan(0)
    expect(last.effect).toBe("defer")
    return last
  })

const regexTenant = (base: string) =>
  Effect.gen(function* () {
    const owner = yield* tenant(base)
    yield* createAgent(base, owner, AGENT)
    for (let i = 0; i < REGEXES; i++) {
      yield* createPolicy(base, owner, `code-${i}`, { type: "regex", value: `code${i}-[0-9]{6}` })
    }
    return owner
  })

// The per-decision limit is set far out of reach here: this suite is about the rate.
layer(
  testServer("database", { DECISION_MS_PER_SECOND_PER_WORKSPACE: "1", DECISION_MATCH_MS: "600000" }),
  SERVER_OPTIONS
)("a workspace's decision allowance", (it) => {
  it.effect("past its allowance a workspace's decisions defer without matching; another workspace's are matched", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const heavy = yield* regexTenant(base)
      const other = yield* regexTenant(base)

      // Matched (permit) until the debt passes the burst; the first one past it defers.
      yield* heavyUntilDeferred(base, heavy)
      // Even a short text now defers: the workspace's debt is past the allowance.
      const deferred = yield* decide(base, heavy, "order code3-123456")
      expect(deferred.effect).toBe("defer")
      expect(deferred.findings.map((finding) => finding.requirement_id)).toEqual(["system:fail_closed"])
      expect(deferred.findings[0]!.reason).toContain("DECISION_MS_PER_SECOND_PER_WORKSPACE")

      const elsewhere = yield* decide(base, other, "order code3-123456")
      expect(elsewhere.effect).toBe("deny")
      expect(elsewhere.findings.map((finding) => finding.requirement_id)).not.toContain("system:fail_closed")
    })
  )
})

// Each workspace's own allowance is out of reach here: this suite is about all workspaces together.
layer(
  testServer("database", {
    DECISION_MS_PER_SECOND_PER_WORKSPACE: "1000000",
    DECISION_MS_PER_SECOND: "1",
    DECISION_MATCH_MS: "600000",
    METRICS_TOKEN
  }),
  SERVER_OPTIONS
)("the service's decision allowance", (it) => {
  it.effect("past it the workspaces that sent heavy decisions lately defer; one that did not is matched", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const heavy = yield* regexTenant(base)
      const other = yield* regexTenant(base)
      const refusals = Effect.map(
        scrape(base, METRICS_TOKEN),
        (metrics) =>
          sample(metrics, "guardrail_decisions_failed_closed_total", { cause: "service_allowance_exceeded" }) ?? 0
      )
      const refusalsBefore = yield* refusals

      // One workspace alone runs the service's debt past the burst; its own allowance never binds.
      const last = yield* heavyUntilDeferred(base, heavy)
      expect(last.findings.map((finding) => finding.requirement_id)).toEqual(["system:fail_closed"])
      expect(last.findings[0]!.reason).toContain("DECISION_MS_PER_SECOND)")
      expect(yield* refusals).toBe(refusalsBefore + 1)

      // A workspace without recent heavy decisions is matched, a heavy one included; once charged, it waits too.
      const elsewhere = yield* decide(base, other, "order code3-123456")
      expect(elsewhere.effect).toBe("deny")
      expect((yield* decide(base, other, AT_CAP)).effect).toBe("permit")
      const afterHeavy = yield* decide(base, other, "order code3-123456")
      expect(afterHeavy.effect).toBe("defer")
      expect(afterHeavy.findings[0]!.reason).toContain("DECISION_MS_PER_SECOND)")
    })
  )
})

layer(testServer("database", { DECISION_MATCH_MS: "10", METRICS_TOKEN }), SERVER_OPTIONS)(
  "one decision's matching time",
  (it) => {
    it.effect("a decision whose matching runs past DECISION_MATCH_MS defers, unmatched", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* regexTenant(base)
        const text = `${AT_CAP.slice(0, 262_144 - 20)} code31-123456`
        // The metrics registry is the process's: files run before this one in the worker count too.
        const cutsCounted = Effect.map(
          scrape(base, METRICS_TOKEN),
          (metrics) =>
            sample(metrics, "guardrail_decisions_failed_closed_total", { cause: "decision_time_exceeded" }) ?? 0
        )
        const cutsBefore = yield* cutsCounted
        const cut = yield* decide(base, owner, text)
        expect(cut.effect).toBe("defer")
        expect(cut.findings.map((finding) => finding.requirement_id)).toEqual(["system:fail_closed"])
        expect(cut.findings[0]!.reason).toContain("DECISION_MATCH_MS")
        // Operators see why decisions were deferred unmatched.
        expect(yield* cutsCounted).toBe(cutsBefore + 1)

        // An impact replay decides it under the same limit, so it reproduces the recorded defer.
        const replayed = yield* replay(owner, aroundNow())
        expect(replayed.result?.recorded_mismatches).toBe(0)
        expect(replayed.result?.transitions.map((t) => [t.from, t.to, t.count])).toEqual([["defer", "defer", 1]])
      })
    )
  }
)
