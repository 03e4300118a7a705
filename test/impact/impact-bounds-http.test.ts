/**
 * Impact replay results stay bounded whatever the window holds: a workspace
 * deciding for an agent id per end user lists at most MAX_AFFECTED_AGENTS
 * agents in `affected_agents` (the first met in replay order), while
 * `changed` still counts every decision.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { MAX_AFFECTED_AGENTS } from "../../src/impact/Replay.js"
import { queryDatabase } from "../support/Database.js"
import { createAgent, policyDocument, propose, reply } from "../support/Events.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, TestDatabaseUrl, testServerWithDatabase } from "../support/TestServer.js"
import { aroundNow, replay } from "./impact-helpers.js"

/** Decisions of other agents than the one recorded: copies of its trace, each under an agent id of its own. */
const COPIES = MAX_AFFECTED_AGENTS + 50

layer(testServerWithDatabase("database"), SERVER_OPTIONS)("impact replay bounds", (it) => {
  it.effect("affected_agents lists at most MAX_AFFECTED_AGENTS agents; changed counts every decision", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      yield* createAgent(base, owner, "user-bot")
      const recorded = yield* propose(base, owner, "user-bot", reply("You get a refund."))
      expect(recorded.effect).toBe("permit")
      yield* queryDatabase(
        yield* TestDatabaseUrl,
        `insert into traces
         select (jsonb_populate_record(null::traces,
                   to_jsonb(t) || jsonb_build_object('id', t.id || '-' || g, 'agent_id', 'user-' || g))).*
           from traces t, generate_series(1, $2::int) g where t.id = $1`,
        [recorded.trace_id, COPIES]
      )
      const done = yield* replay(owner, {
        candidate_policies: [policyDocument("no-refund", { value: "refund" })],
        ...aroundNow()
      })
      expect(done.result).toMatchObject({ decisions_replayed: COPIES + 1, changed: COPIES + 1 })
      const agents = done.result?.affected_agents ?? []
      expect(agents).toHaveLength(MAX_AFFECTED_AGENTS)
      expect(agents.every((agent) => agent.changed === 1)).toBe(true)
      expect(agents.map((agent) => agent.agent_id)).toContain("user-bot")
    })
  )
})
