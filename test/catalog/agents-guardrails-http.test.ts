/**
 * Generated guardrails over HTTP against the real service and PostgreSQL:
 * `POST /v1/agents/{id}/guardrails/generate` with stable ids, an agent's
 * guardrails (generated and authored policies it owns), and generated
 * documents that round-trip. Agent profiles are in
 * agents-profiles-http.test.ts and agents-update-delete-http.test.ts.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { parse } from "yaml"
import { expectFailure, withRaw } from "../support/Api.js"
import { yamlBytes } from "../support/Events.js"
import { tenant } from "../support/Tenants.js"
import { uniqueName } from "../support/TestPlatform.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import {
  agentPath,
  createAgent,
  createPolicy,
  documentOf,
  FULL_AGENT_POLICY_COUNT,
  fullAgentYaml,
  generate,
  getPolicy,
  guardrails,
  ids,
  listPolicies,
  minimalAgentYaml,
  POLICY_ID,
  policyYaml,
  setEnabled,
  validatePolicy
} from "./catalog-helpers.js"

const agentName = (prefix = "bot") => uniqueName(prefix).replaceAll("_", "-")

layer(testServer("database"), SERVER_OPTIONS)("agents over HTTP", (it) => {
  describe("generated guardrails", () => {
    it.effect("generate derives one disabled, agent-owned policy per phrase, each a valid document", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        yield* createAgent(owner, fullAgentYaml("gen-bot"))
        const generated = yield* generate(owner, "gen-bot")
        expect(generated).toHaveLength(FULL_AGENT_POLICY_COUNT)
        for (const policy of generated) {
          expect(policy.id).toMatch(POLICY_ID)
          expect(policy).toMatchObject({ enabled: false, owner_agent_id: "gen-bot" })
          const parsed = documentOf(policy)
          expect(parsed).toMatchObject({ id: policy.id, owner_agent_id: "gen-bot", enabled: false })
          // Each generated document passes the same validation as an authored one.
          const validation = yield* validatePolicy(owner, policy.source_yaml)
          expect(validation, policy.source_yaml).toEqual({ valid: true, policy_id: policy.id, errors: [] })
        }
        const byValue = (value: string) => {
          const found = generated.filter((policy) => documentOf(policy).match.value === value)
          expect(found, value).toHaveLength(1)
          return { summary: found[0]!, document: documentOf(found[0]!) }
        }
        // cannot_promise -> content deny
        for (const phrase of ["a full refund", "free shipping forever"]) {
          const { document, summary } = byValue(phrase)
          expect(summary).toMatchObject({ family: "content", action: "deny", severity: "high" })
          expect(document.match).toMatchObject({ type: "literal", target: "content" })
        }
        // out_of_scope -> defer
        expect(byValue("legal advice").summary).toMatchObject({ family: "content", action: "defer" })
        // tone.forbidden -> rewrite, with the replacement text
        const tone = byValue("stupid")
        expect(tone.summary).toMatchObject({ family: "content", action: "rewrite" })
        expect(typeof tone.document.rewrite === "string" && tone.document.rewrite !== "").toBe(true)
        // escalation trigger -> defer
        expect(byValue("lawyer").summary).toMatchObject({ family: "content", action: "defer" })
        // workflow requirements -> approval (sensitive step) and flow (required-before step) over the named steps
        const approval = byValue("close_account")
        expect(approval.summary).toMatchObject({ family: "approval", action: "defer" })
        expect(approval.document.match.target).toBe("operation")
        const flow = byValue("issue_refund")
        expect(flow.summary).toMatchObject({ family: "flow", action: "defer" })
        expect(flow.document.match.target).toBe("operation")

        // GET .../guardrails lists exactly these (as summaries), and so does GET /v1/policies.
        const listed = yield* withRaw(
          owner.api.agents.listAgentGuardrails({ path: agentPath("gen-bot"), withResponse: true })
        )
        expect(ids(listed.value.policies)).toEqual(ids(generated))
        // As sent: no summary carries source_yaml.
        expect(listed.text).not.toContain('"source_yaml"')
        expect(ids(yield* listPolicies(owner))).toEqual(ids(generated))
        for (const policy of generated) expect((yield* getPolicy(owner, policy.id)).enabled).toBe(false)
      })
    )

    it.effect("regenerating keeps the same ids and count, and keeps a user-enabled policy enabled", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        yield* createAgent(owner, fullAgentYaml("regen-bot"))
        const first = yield* generate(owner, "regen-bot")
        const enabled = first.find((policy) => documentOf(policy).match.value === "a full refund")!
        yield* setEnabled(owner, enabled.id, true)

        const second = yield* generate(owner, "regen-bot")
        expect(ids(second)).toEqual(ids(first))
        const third = yield* generate(owner, "regen-bot")
        expect(ids(third)).toEqual(ids(first))
        expect(yield* listPolicies(owner)).toHaveLength(FULL_AGENT_POLICY_COUNT)
        expect(yield* guardrails(owner, "regen-bot")).toHaveLength(FULL_AGENT_POLICY_COUNT)

        expect((yield* getPolicy(owner, enabled.id)).enabled).toBe(true)
        expect(third.find((policy) => policy.id === enabled.id)!.enabled).toBe(true)
        for (const policy of first.filter((policy) => policy.id !== enabled.id)) {
          expect((yield* getPolicy(owner, policy.id)).enabled, policy.id).toBe(false)
        }
      })
    )

    it.effect("regenerating after phrases left the profile deletes their generated policies, and only those", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        yield* createAgent(owner, fullAgentYaml("trim-bot"))
        yield* createAgent(owner, fullAgentYaml("kept-bot"))
        const first = yield* generate(owner, "trim-bot")
        const others = yield* generate(owner, "kept-bot")
        const authored = yield* createPolicy(owner, policyYaml("trim-bot-authored", { owner: "trim-bot" }))
        const refund = first.find((policy) => documentOf(policy).match.value === "a full refund")!
        yield* setEnabled(owner, refund.id, true)

        // The same profile without "a full refund" among the promises it cannot make.
        const trimmed = fullAgentYaml("trim-bot").replace(/^.*a full refund.*\n/m, "")
        expect(trimmed).not.toContain("a full refund")
        yield* owner.api.agents.replaceAgent({ path: agentPath("trim-bot"), payload: yamlBytes(trimmed) })
        const second = yield* generate(owner, "trim-bot")
        expect(ids(second)).toEqual(ids(first.filter((policy) => policy.id !== refund.id)))
        yield* expectFailure(owner.api.policies.getPolicy({ path: { id: refund.id } }), 404, "policy_not_found")
        // The agent's authored policy and another agent's generated ones stay.
        expect(ids(yield* guardrails(owner, "trim-bot"))).toEqual(ids([...second, authored]))
        expect(ids(yield* guardrails(owner, "kept-bot"))).toEqual(ids(others))
        // A profile that derives nothing any more leaves only what was authored.
        yield* owner.api.agents.replaceAgent({
          path: agentPath("trim-bot"),
          payload: yamlBytes(minimalAgentYaml("trim-bot"))
        })
        expect(yield* generate(owner, "trim-bot")).toEqual([])
        expect(ids(yield* guardrails(owner, "trim-bot"))).toEqual([authored.id])
      })
    )

    it.effect("an agent's guardrails include authored policies it owns, and no other agent's", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        yield* createAgent(owner, minimalAgentYaml("owner-bot"))
        yield* createAgent(owner, fullAgentYaml("other-bot"))
        expect(yield* guardrails(owner, "owner-bot")).toEqual([])
        yield* generate(owner, "other-bot")
        const authored = yield* createPolicy(owner, policyYaml("owner-bot-authored", { owner: "owner-bot" }))
        yield* createPolicy(owner, policyYaml("global-policy"))
        const listed = yield* guardrails(owner, "owner-bot")
        expect(listed).toEqual([
          {
            id: authored.id,
            description: authored.description,
            family: "content",
            severity: "high",
            action: "deny",
            enabled: true,
            owner_agent_id: "owner-bot"
          }
        ])
        // An agent with nothing to derive generates nothing.
        expect(yield* generate(owner, "owner-bot")).toEqual([])
      })
    )

    it.effect("generate and guardrails of an unknown agent are 404 agent_not_found and create nothing", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        yield* expectFailure(generate(owner, "nobody"), 404, "agent_not_found")
        yield* expectFailure(guardrails(owner, "nobody"), 404, "agent_not_found")
        expect(yield* listPolicies(owner)).toEqual([])
      })
    )

    it.effect("agents whose ids differ only in punctuation or case keep separate guardrails", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const agents = ["support_bot", "support-bot", "support.bot", "Support-Bot"]
        const profile = (agentId: string) =>
          `agent_id: ${agentId}\ndisplay_name: ${agentId}\nauthority:\n  cannot_promise: [a full refund]\nscope: {}\ntone: {target: calm}\n`
        for (const agentId of agents) yield* createAgent(owner, profile(agentId))
        const generatedIds: Array<string> = []
        for (const agentId of agents) {
          const generated = yield* generate(owner, agentId)
          expect(generated, agentId).toHaveLength(1)
          expect(generated[0]!.owner_agent_id).toBe(agentId)
          generatedIds.push(generated[0]!.id)
        }
        // Generating for one agent must not take over another agent's policy.
        expect(new Set(generatedIds).size, generatedIds.join(", ")).toBe(agents.length)
        for (const agentId of agents) {
          const listed = yield* guardrails(owner, agentId)
          expect(
            listed.map((policy) => policy.owner_agent_id),
            agentId
          ).toEqual([agentId])
        }
        expect(yield* listPolicies(owner)).toHaveLength(agents.length)
      })
    )

    it.effect("distinct phrases that slug alike (non-Latin, punctuation) each get their own policy", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const phrases = ["全额退款", "终身保修", "a full refund!", "a full refund?"]
        const agentId = agentName("i18n")
        const yaml = `agent_id: ${agentId}\ndisplay_name: I18n\nauthority:\n  cannot_promise: ${JSON.stringify(phrases)}\nscope: {}\ntone: {target: calm}\n`
        yield* createAgent(owner, yaml)
        const generated = yield* generate(owner, agentId)
        expect(generated.map((policy) => documentOf(policy).match.value).sort()).toEqual([...phrases].sort())
        for (const policy of generated) expect(policy.id).toMatch(POLICY_ID)
      })
    )

    it.effect("generated documents round-trip: each source_yaml parses to its own id and owner", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        yield* createAgent(owner, fullAgentYaml("yaml-bot"))
        for (const policy of yield* generate(owner, "yaml-bot")) {
          const parsed = parse(policy.source_yaml) as Record<string, unknown>
          expect(parsed).toMatchObject({
            id: policy.id,
            description: policy.description,
            family: policy.family,
            severity: policy.severity,
            action: policy.action
          })
        }
      })
    )
  })
})
