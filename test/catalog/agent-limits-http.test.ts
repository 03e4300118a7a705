/**
 * Agent profiles under hostile use: a workspace stores at most
 * MAX_AGENTS_PER_WORKSPACE profiles (set low here), because every decision's
 * snapshot holds all of them and `GET /v1/agents` answers them all. Past the
 * cap a create is 409 agent_limit_reached, even when sent at once; creating
 * one that exists is still agent_exists; a delete makes room; other
 * workspaces are not affected.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { expectFailure } from "../support/Api.js"
import { createAgent } from "../support/Events.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"

const MAX_AGENTS = 4

layer(testServer("database", { MAX_AGENTS_PER_WORKSPACE: String(MAX_AGENTS) }), SERVER_OPTIONS)(
  "agent profile limits",
  (it) => {
    it.effect("an agent past the cap is 409 agent_limit_reached, even when sent at once", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const other = yield* tenant(base)
        // Before, there was no cap: every profile was stored and loaded into each decision's snapshot.
        const ids = Array.from({ length: MAX_AGENTS + 2 }, (_, index) => `agent-${index}`)
        const outcomes = yield* Effect.forEach(ids, (id) => Effect.either(createAgent(base, owner, id)), {
          concurrency: "unbounded"
        })
        expect(outcomes.filter((outcome) => outcome._tag === "Right")).toHaveLength(MAX_AGENTS)
        const refused = yield* expectFailure(createAgent(base, owner, "one-more"), 409, "agent_limit_reached")
        expect(refused.message).toMatch(/MAX_AGENTS_PER_WORKSPACE/)
        const { agents } = yield* owner.api.agents.listAgents()
        expect(agents).toHaveLength(MAX_AGENTS)
        // One that exists is named as such, at the cap too.
        yield* expectFailure(createAgent(base, owner, agents[0]!.agent_id), 409, "agent_exists")
        // Another workspace has its own room.
        yield* createAgent(base, other, "agent-0")
        // A delete makes room again.
        yield* owner.api.agents.deleteAgent({ path: { id: agents[0]!.agent_id } })
        yield* createAgent(base, owner, "after-a-delete")
      })
    )
  }
)
