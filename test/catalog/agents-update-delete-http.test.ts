/**
 * Agent profiles over HTTP against the real service and PostgreSQL: 409 on a
 * taken agent_id, PUT (extension), and delete (which disables, never
 * deletes, the agent's policies). Create, read, list and validation are in
 * agents-profiles-http.test.ts; generated guardrails in
 * agents-guardrails-http.test.ts.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { expectFailure, expectInvalid, withRaw } from "../support/Api.js"
import { expectError } from "../support/Raw.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import {
  agentPath,
  createAgent,
  createPolicy,
  detailPaths,
  expectRawStatus,
  FULL_AGENT_POLICY_COUNT,
  fullAgentJson,
  fullAgentYaml,
  generate,
  getAgent,
  getPolicy,
  ids,
  JSON_TYPE,
  listAgents,
  listPolicies,
  minimalAgentYaml,
  policyYaml,
  sendText,
  setEnabled
} from "./catalog-helpers.js"
import { yamlBytes } from "../support/Events.js"
import { expectedFullAgent } from "./agents-support.js"

layer(testServer("database"), SERVER_OPTIONS)("agents over HTTP", (it) => {
  describe("409 and PUT", () => {
    it.effect("a second POST with a taken agent_id is 409 agent_exists pointing to PUT; the first profile stays", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        yield* createAgent(owner, fullAgentYaml("dup-bot"))
        const error = yield* expectFailure(
          createAgent(owner, minimalAgentYaml("dup-bot", "Other")),
          409,
          "agent_exists"
        )
        expect(error.message).toContain("PUT /v1/agents/dup-bot")
        // Raw: the same as application/json.
        const asJson = yield* sendText(
          base,
          owner.jwt,
          "POST",
          "/v1/agents",
          JSON.stringify(fullAgentJson("dup-bot")),
          JSON_TYPE
        )
        expectError(asJson, 409, "agent_exists")
        expect(yield* getAgent(owner, "dup-bot")).toEqual(expectedFullAgent("dup-bot"))
        expect(yield* listAgents(owner)).toHaveLength(1)
      })
    )

    it.effect("agent ids differing only in case are different agents", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        yield* createAgent(owner, minimalAgentYaml("CaseBot", "Upper"))
        yield* createAgent(owner, minimalAgentYaml("casebot", "Lower"))
        expect((yield* getAgent(owner, "CaseBot")).display_name).toBe("Upper")
        expect((yield* getAgent(owner, "casebot")).display_name).toBe("Lower")
      })
    )

    it.effect("PUT replaces the whole profile (YAML or JSON); absent fields become empty again", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        yield* createAgent(owner, fullAgentYaml("put-bot"))
        const replaced = yield* owner.api.agents.replaceAgent({
          path: agentPath("put-bot"),
          payload: yamlBytes(minimalAgentYaml("put-bot", "Renamed"))
        })
        expect(replaced.display_name).toBe("Renamed")
        expect(replaced.authority.cannot_promise).toEqual([])
        expect(replaced.system_prompt).toBeNull()
        expect(yield* getAgent(owner, "put-bot")).toEqual(replaced)
        // Raw: a JSON body (application/json).
        const back = expectRawStatus(
          yield* sendText(
            base,
            owner.jwt,
            "PUT",
            "/v1/agents/put-bot",
            JSON.stringify(fullAgentJson("put-bot")),
            JSON_TYPE
          ),
          200
        )
        expect(back).toEqual(expectedFullAgent("put-bot"))
        expect(yield* listAgents(owner)).toHaveLength(1)
      })
    )

    it.effect("PUT whose document names another agent_id is 400 at agent_id; nothing changes", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        yield* createAgent(owner, fullAgentYaml("put-mismatch"))
        yield* expectInvalid(
          owner.api.agents.replaceAgent({
            path: agentPath("put-mismatch"),
            payload: yamlBytes(minimalAgentYaml("someone-else"))
          }),
          "agent_id"
        )
        expect(yield* getAgent(owner, "put-mismatch")).toEqual(expectedFullAgent("put-mismatch"))
        yield* expectFailure(getAgent(owner, "someone-else"), 404, "agent_not_found")
      })
    )

    it.effect("PUT of an unknown agent is 404 (it does not create); an invalid document is 400", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        yield* expectFailure(
          owner.api.agents.replaceAgent({
            path: agentPath("ghost-bot"),
            payload: yamlBytes(minimalAgentYaml("ghost-bot"))
          }),
          404,
          "agent_not_found"
        )
        yield* expectFailure(getAgent(owner, "ghost-bot"), 404, "agent_not_found")
        yield* createAgent(owner, minimalAgentYaml("put-invalid"))
        const invalid = yield* expectInvalid(
          owner.api.agents.replaceAgent({
            path: agentPath("put-invalid"),
            payload: yamlBytes("agent_id: put-invalid\ntone: {}\n")
          }),
          "tone.target"
        )
        expect(detailPaths(invalid)).toEqual(
          expect.arrayContaining(["display_name", "authority", "scope", "tone.target"])
        )
      })
    )
  })

  describe("delete", () => {
    it.effect("DELETE answers 204 and disables (never deletes) every policy the agent owns", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        yield* createAgent(owner, fullAgentYaml("doomed-bot"))
        const generated = yield* generate(owner, "doomed-bot")
        expect(generated).toHaveLength(FULL_AGENT_POLICY_COUNT)
        // One generated policy enabled by the user, one authored policy owned by the agent (enabled on create),
        // and one policy of nobody in particular.
        yield* setEnabled(owner, generated[0]!.id, true)
        const authored = yield* createPolicy(owner, policyYaml("doomed-authored", { owner: "doomed-bot" }))
        expect(authored.enabled).toBe(true)
        const unrelated = yield* createPolicy(owner, policyYaml("unrelated-policy"))

        const deleted = yield* withRaw(
          owner.api.agents.deleteAgent({ path: agentPath("doomed-bot"), withResponse: true })
        )
        expect(deleted.status, deleted.text).toBe(204)
        expect(deleted.text).toBe("")
        yield* expectFailure(getAgent(owner, "doomed-bot"), 404, "agent_not_found")
        yield* expectFailure(owner.api.agents.deleteAgent({ path: agentPath("doomed-bot") }), 404, "agent_not_found")

        for (const policy of [...generated, authored]) {
          const after = yield* getPolicy(owner, policy.id)
          expect(after, policy.id).toMatchObject({ enabled: false, owner_agent_id: "doomed-bot" })
          expect(after.source_yaml).toBe(policy.source_yaml)
        }
        expect((yield* getPolicy(owner, unrelated.id)).enabled).toBe(true)
        expect(ids(yield* listPolicies(owner))).toEqual(ids([...generated, authored, unrelated]))
      })
    )

    it.effect("DELETE of an unknown agent is 404 and changes nothing, not even policies naming that agent", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        // A policy may name an agent that is not registered (yet).
        const policy = yield* createPolicy(owner, policyYaml("for-unregistered", { owner: "unregistered-bot" }))
        expect(policy.enabled).toBe(true)
        yield* expectFailure(
          owner.api.agents.deleteAgent({ path: agentPath("unregistered-bot") }),
          404,
          "agent_not_found"
        )
        expect((yield* getPolicy(owner, policy.id)).enabled).toBe(true)
      })
    )
  })
})
