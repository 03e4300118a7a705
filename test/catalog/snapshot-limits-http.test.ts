/**
 * What every decision's snapshot holds, under hostile use: a workspace
 * stores at most MAX_AGENTS_PER_WORKSPACE profiles,
 * MAX_TOOL_METADATA_PER_WORKSPACE tools' metadata and
 * MAX_LABEL_POLICIES_PER_WORKSPACE label policies (set low here), and their
 * lists answer them all. Past a cap a create is 409, even when sent at once;
 * creating a profile that exists is still agent_exists and an upsert of a
 * stored key still replaces it; a delete makes room; other workspaces are
 * not affected.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { expectFailure } from "../support/Api.js"
import { createAgent } from "../support/Events.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"

const MAX_AGENTS = 4
const MAX_ENTRIES = 3
const SETTINGS = {
  MAX_AGENTS_PER_WORKSPACE: String(MAX_AGENTS),
  MAX_TOOL_METADATA_PER_WORKSPACE: String(MAX_ENTRIES),
  MAX_LABEL_POLICIES_PER_WORKSPACE: String(MAX_ENTRIES)
}

layer(testServer("database", SETTINGS), SERVER_OPTIONS)("snapshot limits", (it) => {
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

  it.effect("tools' metadata and label policies past their caps are 409; a stored key is still replaced", () =>
    Effect.gen(function* () {
      const owner = yield* tenant(yield* baseUrl)
      const names = Array.from({ length: MAX_ENTRIES + 2 }, (_, index) => `entry_${index}`)
      const tools = yield* Effect.forEach(
        names,
        (tool) =>
          Effect.either(
            owner.api.toolMetadata.upsertToolMetadata({ payload: { tool, reversible: true, side_effect: "none" } })
          ),
        { concurrency: "unbounded" }
      )
      expect(tools.filter((outcome) => outcome._tag === "Right")).toHaveLength(MAX_ENTRIES)
      const tool = yield* expectFailure(
        owner.api.toolMetadata.upsertToolMetadata({
          payload: { tool: "one_more", reversible: true, side_effect: "none" }
        }),
        409,
        "tool_metadata_limit_reached"
      )
      expect(tool.message).toMatch(/MAX_TOOL_METADATA_PER_WORKSPACE/)
      const { tools: stored } = yield* owner.api.toolMetadata.listToolMetadata()
      expect(stored).toHaveLength(MAX_ENTRIES)
      const replaced = yield* owner.api.toolMetadata.upsertToolMetadata({
        payload: { tool: stored[0]!.metadata.tool, reversible: false, side_effect: "none" }
      })
      expect(replaced.metadata.reversible).toBe(false)

      const labels = yield* Effect.forEach(
        names,
        (origin) => Effect.either(owner.api.labelPolicies.upsertLabelPolicy({ payload: { origin } })),
        { concurrency: "unbounded" }
      )
      expect(labels.filter((outcome) => outcome._tag === "Right")).toHaveLength(MAX_ENTRIES)
      yield* expectFailure(
        owner.api.labelPolicies.upsertLabelPolicy({ payload: { origin: "one_more" } }),
        409,
        "label_policy_limit_reached"
      )
    })
  )
})
