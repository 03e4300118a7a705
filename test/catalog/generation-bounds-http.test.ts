/**
 * Generated guardrails stay within what an authored policy may be: a
 * profile phrase of the longest allowed length (4,000 characters) generates
 * policies that validate, can be enabled and then decide; and a profile that
 * would generate more policies than the workspace may store is refused
 * before any is built or written.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { expectFailure } from "../support/Api.js"
import { propose, reply, yamlBytes } from "../support/Events.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import {
  agentPath,
  createAgent,
  generate,
  getPolicy,
  listPolicies,
  setEnabled,
  validatePolicy
} from "./catalog-helpers.js"

/** A profile (JSON text, which the endpoint reads as YAML) with `fields` over the required ones. */
const profile = (agentId: string, fields: Record<string, unknown> = {}) =>
  JSON.stringify({
    agent_id: agentId,
    display_name: "Bounds Bot",
    authority: {},
    scope: {},
    tone: { target: "plain" },
    ...fields
  })

layer(testServer("database"), SERVER_OPTIONS)("generated guardrails within bounds", (it) => {
  it.effect("4,000-character phrases generate policies that validate, enable and decide", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const agent = "long-phrase-bot"
      // The longest sentence a profile takes, ending in an emoji so a cut could split its surrogate pair.
      const phrase = (word: string) => `${word} `.repeat(4_000).slice(0, 3_998) + "😀"
      const promise = phrase("refund")
      yield* createAgent(
        owner,
        profile(agent, {
          authority: { cannot_promise: [promise] },
          scope: { out_of_scope: [phrase("law")] },
          tone: { target: "plain", forbidden: [phrase("rude")] },
          escalation_triggers: [phrase("lawyer")]
        })
      )
      const generated = yield* generate(owner, agent)
      expect(generated).toHaveLength(4)
      for (const policy of generated) {
        expect(policy.description.length).toBeLessThanOrEqual(4_000)
        const validation = yield* validatePolicy(owner, policy.source_yaml)
        expect(validation, policy.id).toEqual({ valid: true, policy_id: policy.id, errors: [] })
        expect((yield* setEnabled(owner, policy.id, true)).enabled).toBe(true)
      }
      const deny = generated.find((policy) => policy.action === "deny")!
      expect((yield* propose(base, owner, agent, reply(`Sure: ${promise}`))).effect).toBe("deny")
      const after = yield* getPolicy(owner, deny.id)
      expect(after.enabled).toBe(true)
      expect(after).not.toHaveProperty("invalid_reason")
    })
  )

  it.effect(
    "a profile that would generate more policies than the workspace may store is refused before any is written",
    () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const agent = "many-steps-bot"
        // 60 requirements of 20 steps each: 1,200 approval policies, past the default 1,000 a workspace may store.
        const steps = Array.from({ length: 20 }, (_, index) => `step_${index}`)
        const requirements = Array.from({ length: 60 }, (_, index) => ({
          name: `req_${index}`,
          required_before: [],
          sensitive_steps: steps
        }))
        yield* createAgent(owner, profile(agent, { workflow_requirements: requirements }))
        const refused = yield* expectFailure(
          owner.api.agents.generateAgentGuardrails({ path: agentPath(agent) }),
          409,
          "policy_limit_reached"
        )
        expect(refused.message).toContain("would generate 1,200 policies")
        expect(yield* listPolicies(owner)).toEqual([])
        // One requirement fewer than the limit allows generates (and a phrase repeated counts once).
        yield* owner.api.agents.replaceAgent({
          path: agentPath(agent),
          payload: yamlBytes(
            profile(agent, { workflow_requirements: [...requirements.slice(0, 50), { ...requirements[0]! }] })
          )
        })
        expect(yield* generate(owner, agent)).toHaveLength(1_000)
      })
  )
})
