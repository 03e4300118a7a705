/**
 * A replay whose decisions are heavy keeps its job: its worker reports (the
 * job's heartbeat) by time while it replays, not only after each page of
 * 2,000 decisions, so a page that takes longer than IMPACT_STALE_AFTER_SECONDS
 * is not taken for a stopped worker, queued again and replayed from the
 * start until the job fails ("stopped 3 times").
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { queryDatabase } from "../support/Database.js"
import { createAgent, policyDocument, propose, reply } from "../support/Events.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, TestDatabaseUrl, testServerWithDatabase } from "../support/TestServer.js"
import { aroundNow, replay } from "./impact-helpers.js"

/** One page of decisions (the runner's PAGE_SIZE), each over long content: replaying it takes seconds. */
const DECISIONS = 2_000
const CONTENT = `${"a long reply about orders and parcels ".repeat(40)}refund`

layer(testServerWithDatabase("database", { IMPACT_STALE_AFTER_SECONDS: "1" }), SERVER_OPTIONS)(
  "impact replay heartbeat",
  (it) => {
    it.effect("a page replayed for longer than IMPACT_STALE_AFTER_SECONDS completes at the first attempt", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const url = yield* TestDatabaseUrl
        const owner = yield* tenant(base)
        yield* createAgent(base, owner, "long-bot")
        const recorded = yield* propose(base, owner, "long-bot", reply(CONTENT))
        yield* queryDatabase(
          url,
          `insert into traces
           select (jsonb_populate_record(null::traces, to_jsonb(t) || jsonb_build_object('id', t.id || '-' || g))).*
             from traces t, generate_series(1, $2::int) g where t.id = $1`,
          [recorded.trace_id, DECISIONS - 1]
        )
        const done = yield* replay(owner, {
          candidate_policies: Array.from({ length: 8 }, (_, index) =>
            policyDocument(`long-${index}`, { value: `parcels? ${index}|refund$`, type: "regex" })
          ),
          ...aroundNow()
        })
        const [job] = yield* queryDatabase<{ resume_count: number }>(
          url,
          "select resume_count from impact_jobs where id = $1",
          [done.id]
        )
        expect({ replayed: done.result?.decisions_replayed, resumes: job?.resume_count }).toEqual({
          replayed: DECISIONS,
          resumes: 0
        })
      })
    )
  }
)
