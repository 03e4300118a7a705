/**
 * A run's counters cost the same per batch however long the run: the p95 is
 * kept in the run's latency sketch, merged per batch, not recomputed over all
 * of the run's traces. Shown by holding the `traces` table locked (as a long
 * maintenance statement would): before, every batch read the run's traces,
 * so the counters stopped; now they keep up, and the p95 is within the
 * sketch's bound (at most 10 % + 1 ms above the exact one) of the decisions
 * counted, across batches.
 */
import { describe, expect, it } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer } from "effect"
import { randomUUID } from "node:crypto"
import { EventLog } from "../../src/platform/EventLog.js"
import { PlatformCoreLive } from "../../src/platform/Platform.js"
import { Topics } from "../../src/platform/Topics.js"
import { RunCountersLive } from "../../src/runs/RunCounters.js"
import { lockedTable } from "../support/Database.js"
import { eventually } from "../support/Eventually.js"
import { configLayer, freshDatabase, settingsFor, uniqueName } from "../support/TestPlatform.js"
import { expectNearP95, p95 } from "./counters-scenario.js"

describe("run counters of a long run", () => {
  it.live(
    "keep up without reading the run's traces, and report its p95 within the sketch's bound",
    () =>
      Effect.gen(function* () {
        const url = yield* freshDatabase
        const context = yield* Layer.build(
          RunCountersLive.pipe(
            Layer.provideMerge(PlatformCoreLive),
            Layer.provide(configLayer(settingsFor("database", url)))
          )
        )
        const sql = Context.get(context, SqlClient.SqlClient)
        const log = Context.get(context, EventLog)
        const workspaceId = uniqueName("ws")
        const runId = uniqueName("run")
        yield* sql`insert into organizations (id, name) values (${workspaceId}, 'org')`
        yield* sql`insert into workspaces (id, organization_id, name, slug) values (${workspaceId}, ${workspaceId}, 'ws', 'ws')`
        yield* sql`insert into runs (id, workspace_id, agent_id, environment_id, environment, kind, status)
                   values (${runId}, ${workspaceId}, 'agent', 'env', 'production', 'chat_session', 'running')`

        const decisions = (latencies: ReadonlyArray<number>) =>
          log.publish(
            latencies.map((latency) => ({
              eventId: randomUUID(),
              topic: Topics.decisions,
              key: workspaceId,
              value: JSON.stringify({
                schema_version: 1,
                trace_id: `trc_${randomUUID()}`,
                workspace_id: workspaceId,
                agent_id: "agent",
                environment_id: "env",
                run_id: runId,
                session_id: null,
                effect: "permit",
                status: "decided",
                domain: "content",
                policy_ids: [],
                latency_ms: latency,
                decided_at: new Date().toISOString()
              })
            }))
          )
        const countersAt = (traces: number) =>
          eventually(
            Effect.flatMap(
              sql<{ trace_count: number; p95_latency_ms: number }>`
                select trace_count, p95_latency_ms from runs where id = ${runId}`,
              ([run]) => (run !== undefined && run.trace_count >= traces ? Effect.succeed(run) : Effect.fail(run))
            ),
            "60 seconds"
          )

        const first = Array.from({ length: 100 }, (_, i) => i + 1)
        yield* decisions(first)
        expect((yield* countersAt(100)).trace_count).toBe(100)

        // More of the run, while nothing can read `traces`: the counters still move.
        const second = Array.from({ length: 100 }, (_, i) => 200 + i)
        yield* Effect.scoped(
          Effect.gen(function* () {
            yield* lockedTable(url, "traces")
            yield* decisions(second)
            const later = yield* countersAt(200)
            expect(later.trace_count).toBe(200)
            expectNearP95(later.p95_latency_ms, p95([...first, ...second]))
          })
        )
        // And one batch more, past the lock: the sketch carries the earlier batches.
        const third = Array.from({ length: 800 }, (_, i) => 1 + (i % 50))
        yield* decisions(third)
        const settled = yield* countersAt(1_000)
        expect(settled.trace_count).toBe(1_000)
        expectNearP95(settled.p95_latency_ms, p95([...first, ...second, ...third]))
      }).pipe(Effect.scoped),
    120_000
  )
})
