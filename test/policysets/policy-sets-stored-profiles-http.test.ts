/**
 * A policy set names the agent profile version that decided. Versions that
 * migration 0022 copied from profiles stored before `canaries` existed lack
 * the field: they read as having none, like the profile itself, instead of
 * failing the answer's schema (a 500).
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { queryDatabase } from "../support/Database.js"
import { createAgent, propose, reply } from "../support/Events.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, TestDatabaseUrl, testServerWithDatabase } from "../support/TestServer.js"

const AGENT = "older-profile-bot"

layer(testServerWithDatabase("database"), SERVER_OPTIONS)("policy sets of older profiles", (it) => {
  it.effect("an agent version stored without canaries reads as having none", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const databaseUrl = yield* TestDatabaseUrl
      const owner = yield* tenant(base)
      yield* createAgent(base, owner, AGENT)
      const decision = yield* propose(base, owner, AGENT, reply("Hello."))
      const receipt = yield* owner.api.receipts.getReceipt({ path: { id: decision.receipt_id } })
      yield* queryDatabase(
        databaseUrl,
        `update catalog_versions set content = jsonb_set(content, '{profile}', (content->'profile') - 'canaries')
         where workspace_id = $1 and resource = 'agent' and key = $2`,
        [owner.workspaceId, AGENT]
      )
      const set = yield* owner.api.policySets.getPolicySet({ path: { digest: receipt.policy_set_digest! } })
      expect(set.agent).toMatchObject({ agent_id: AGENT, version: 1, profile: { agent_id: AGENT, canaries: [] } })
    })
  )
})
