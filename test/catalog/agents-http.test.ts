/**
 * Agent profiles and generated guardrails over HTTP against the real
 * service and PostgreSQL: YAML and JSON bodies, every validation error with
 * its path, 409 on a taken agent_id, PUT (extension), delete (which
 * disables, never deletes, the agent's policies), and
 * `POST /v1/agents/{id}/guardrails/generate` with stable ids.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { parse } from "yaml"
import { expectFailure, expectInvalid, keysOf, withRaw } from "../support/Api.js"
import { call, expectError, expectValidation } from "../support/Raw.js"
import { tenant } from "../support/Tenants.js"
import { uniqueName } from "../support/TestPlatform.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import {
  agentPath,
  createAgent,
  createPolicy,
  detailPaths,
  documentOf,
  expectErrorShape,
  expectRawStatus,
  expectWellFormedDetails,
  FULL_AGENT_POLICY_COUNT,
  fullAgentJson,
  fullAgentYaml,
  generate,
  getAgent,
  getPolicy,
  guardrails,
  ids,
  JSON_TYPE,
  listAgents,
  listPolicies,
  minimalAgentYaml,
  POLICY_ID,
  policyYaml,
  sendText,
  setEnabled,
  validatePolicy
} from "./catalog-helpers.js"
import { yamlBytes } from "../support/Events.js"

const AGENT_KEYS = [
  "agent_id",
  "authority",
  "canaries",
  "display_name",
  "escalation_triggers",
  "knowledge_sources",
  "scope",
  "system_prompt",
  "target_url",
  "tone",
  "workflow_definition",
  "workflow_requirements"
].sort()

/** The full profile as the API returns it. */
const expectedFullAgent = (agentId: string, displayName = "Support Bot") => ({
  agent_id: agentId,
  display_name: displayName,
  system_prompt: "You help customers with orders.",
  target_url: "https://agent.example.com/chat",
  authority: {
    can_promise: ["a callback within one business day"],
    cannot_promise: ["a full refund", "free shipping forever"]
  },
  scope: { in_scope: ["orders", "shipping"], out_of_scope: ["legal advice"] },
  tone: { target: "friendly and concise", forbidden: ["stupid"] },
  escalation_triggers: ["lawyer"],
  knowledge_sources: [{ kb_id: "faq", description: "Public FAQ", url: "https://example.com/faq", kind: "local" }],
  workflow_definition: { steps: ["verify_identity", "issue_refund"] },
  workflow_requirements: [
    { name: "verify_identity", required_before: ["issue_refund"], sensitive_steps: ["close_account"] }
  ],
  canaries: []
})

const agentName = (prefix = "bot") => uniqueName(prefix).replaceAll("_", "-")

layer(testServer("database"), SERVER_OPTIONS)("agents over HTTP", (it) => {
  describe("create, read, list", () => {
    it.effect("POST with a YAML profile answers 201 with the normalized profile; GET answers the same", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const created = yield* withRaw(
          owner.api.agents.createAgent({ payload: yamlBytes(fullAgentYaml("support-bot")), withResponse: true })
        )
        expect(created.status).toBe(201)
        expect(created.body).toEqual(expectedFullAgent("support-bot"))
        expect(keysOf(created.body)).toEqual(AGENT_KEYS)
        const read = yield* getAgent(owner, "support-bot")
        expect(read).toEqual(created.value)
      })
    )

    it.effect("POST with a JSON profile (application/json) is read the same way as YAML", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        // The contract's client sends documents as application/yaml: JSON's own media type goes raw.
        const text = JSON.stringify(fullAgentJson("json-bot", "JSON Bot"), null, 2)
        const created = expectRawStatus(yield* sendText(base, owner.jwt, "POST", "/v1/agents", text, JSON_TYPE), 201)
        expect(created).toEqual(expectedFullAgent("json-bot", "JSON Bot"))
        // JSON text sent as application/yaml is YAML 1.2, so it is accepted too.
        const asYaml = JSON.stringify(fullAgentJson("json-as-yaml"))
        expect(yield* createAgent(owner, asYaml)).toEqual(expectedFullAgent("json-as-yaml"))
      })
    )

    it.effect("a minimal profile gets every list (empty) and null texts", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const created = yield* createAgent(owner, minimalAgentYaml("minimal-bot"))
        expect(created).toEqual({
          agent_id: "minimal-bot",
          display_name: "Minimal Bot",
          system_prompt: null,
          target_url: null,
          authority: { can_promise: [], cannot_promise: [] },
          scope: { in_scope: [], out_of_scope: [] },
          tone: { target: "neutral", forbidden: [] },
          escalation_triggers: [],
          knowledge_sources: [],
          workflow_definition: null,
          workflow_requirements: [],
          canaries: []
        })
      })
    )

    it.effect("GET /v1/agents lists the workspace's agents, newest first", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        expect(yield* owner.api.agents.listAgents()).toEqual({ agents: [] })
        yield* createAgent(owner, minimalAgentYaml("first-bot"))
        yield* Effect.sleep("5 millis")
        yield* createAgent(owner, fullAgentYaml("second-bot"))
        const agents = yield* listAgents(owner)
        expect(agents.map((agent) => agent.agent_id)).toEqual(["second-bot", "first-bot"])
        expect(agents[0]).toEqual(expectedFullAgent("second-bot"))
      })
    )

    it.effect("GET of an unknown agent is 404 agent_not_found", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        yield* expectFailure(getAgent(owner, "no-such-bot"), 404, "agent_not_found")
      })
    )
  })

  describe("validation", () => {
    it.effect("an invalid profile is 400 validation_failed naming every error's path at once", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const yaml = ["agent_id: 'bad id!'", "authority: {}", "scope: {}", "tone:", "  forbidden: [x]"].join("\n")
        const error = yield* expectInvalid(createAgent(owner, yaml), "agent_id")
        expectWellFormedDetails(error)
        expect(detailPaths(error)).toEqual(expect.arrayContaining(["agent_id", "display_name", "tone.target"]))
        // Nothing was created.
        expect(yield* owner.api.agents.listAgents()).toEqual({ agents: [] })
      })
    )

    it.effect("a missing tone.target alone is reported at tone.target (JSON body too)", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        // Raw: a JSON body (application/json), which the client does not send.
        const profile = { agent_id: "toneless", display_name: "T", authority: {}, scope: {}, tone: { forbidden: [] } }
        const response = yield* sendText(base, owner.jwt, "POST", "/v1/agents", JSON.stringify(profile), JSON_TYPE)
        const error = expectValidation(response, "tone.target")
        expect(detailPaths(error)).toEqual(["tone.target"])
      })
    )

    it.effect("wrong types deep in the document name their path (lists, nested objects)", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const profile = {
          agent_id: "typed",
          display_name: "T",
          authority: { cannot_promise: ["ok", 3] },
          scope: { out_of_scope: "not a list" },
          tone: { target: "calm" },
          workflow_requirements: [{ name: "w", required_before: [], sensitive_steps: [true] }]
        }
        // Raw: a JSON body (application/json), which the client does not send.
        const response = yield* sendText(base, owner.jwt, "POST", "/v1/agents", JSON.stringify(profile), JSON_TYPE)
        const error = expectValidation(response, "authority.cannot_promise.1")
        expect(detailPaths(error)).toEqual(
          expect.arrayContaining([
            "authority.cannot_promise.1",
            "scope.out_of_scope",
            "workflow_requirements.0.sensitive_steps.0"
          ])
        )
      })
    )

    it.effect("syntax errors, an empty body and a non-mapping document are 400 with the empty path", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const error = yield* expectInvalid(
          createAgent(owner, "agent_id: a\ndisplay_name: d\nscope: content\n  tone: low\n"),
          ""
        )
        expect(error.message).toMatch(/YAML syntax error at line 3, column \d+/)
        yield* expectInvalid(createAgent(owner, ""), "")
        yield* expectInvalid(createAgent(owner, "- a\n- b\n"), "")
        // Raw: broken JSON as application/json.
        expectValidation(yield* sendText(base, owner.jwt, "POST", "/v1/agents", '{"agent_id": "x",', JSON_TYPE), "")
      })
    )

    it.effect("a body that is not YAML, JSON or UTF-8 text: 415 for text/plain, 400 for invalid UTF-8", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        // Raw: media types the contract does not accept.
        const plain = yield* sendText(
          base,
          owner.jwt,
          "POST",
          "/v1/agents",
          minimalAgentYaml("plain-bot"),
          "text/plain"
        )
        expectError(plain, 415, "unsupported_media_type")
        const none = yield* call(base, "POST", "/v1/agents", {
          token: owner.jwt,
          raw: minimalAgentYaml("typeless-bot"),
          contentType: "application/octet-stream"
        })
        expectError(none, 415, "unsupported_media_type")
        const put = yield* sendText(
          base,
          owner.jwt,
          "PUT",
          "/v1/agents/plain-bot",
          minimalAgentYaml("plain-bot"),
          "text/plain"
        )
        expectError(put, 415, "unsupported_media_type")
        yield* expectFailure(getAgent(owner, "plain-bot"), 404, "agent_not_found")
        const bytes = new Uint8Array([
          ...new TextEncoder().encode("agent_id: utf-bot\ndisplay_name: "),
          0xff,
          0xfe,
          0x0a
        ])
        yield* expectInvalid(owner.api.agents.createAgent({ payload: bytes }), "")
      })
    )

    it.effect("a text the database cannot store (NUL, lone surrogate) is 400, never 500", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const documents = [
          // YAML escapes
          'agent_id: nul-bot\ndisplay_name: "a\\0b"\nauthority: {}\nscope: {}\ntone: {target: calm}\n',
          'agent_id: sur-bot\ndisplay_name: "a\\uD800b"\nauthority: {}\nscope: {}\ntone: {target: calm}\n',
          // a raw NUL byte in the text
          'agent_id: raw-nul-bot\ndisplay_name: "a\u0000b"\nauthority: {}\nscope: {}\ntone: {target: calm}\n'
        ]
        for (const text of documents) {
          expectErrorShape(yield* expectFailure(createAgent(owner, text), 400))
        }
        // JSON escape, sent as JSON (raw: application/json)
        const json = JSON.stringify({
          agent_id: "json-nul-bot",
          display_name: "a\u0000b",
          authority: {},
          scope: {},
          tone: { target: "t" }
        })
        const response = yield* sendText(base, owner.jwt, "POST", "/v1/agents", json, JSON_TYPE)
        expect(response.status, `${JSON.stringify(json)}: ${response.text}`).toBe(400)
        expectError(response, 400)
        expect(yield* owner.api.agents.listAgents()).toEqual({ agents: [] })
      })
    )
  })

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
