/**
 * Run counters with the database event log: decisions made with `run_id`
 * reach the run's trace_count, blocked_count, rewritten_count,
 * escalated_count and p95_latency_ms through the `decisions` topic and the
 * run-counters consumer (the Kafka suite runs the same scenario).
 */
import { layer } from "@effect/vitest"
import { Effect } from "effect"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import { runCountersScenario } from "./counters-scenario.js"

layer(testServer("database"), SERVER_OPTIONS)("run counters (database event log)", (it) => {
  it.effect("deny, rewrite and escalation decisions with run_id show up in the run's counters within 10 s", () =>
    Effect.gen(function* () {
      yield* runCountersScenario(yield* baseUrl)
    })
  )
})
