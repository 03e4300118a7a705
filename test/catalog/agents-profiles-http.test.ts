/**
 * Agent profiles over HTTP against the real service and PostgreSQL: create
 * from YAML and JSON bodies, read and list, and every validation error with
 * its path. 409 on a taken agent_id, PUT and delete are in
 * agents-update-delete-http.test.ts; generated guardrails in
 * agents-guardrails-http.test.ts.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { expectFailure, expectInvalid, keysOf, withRaw } from "../support/Api.js"
import { call, expectError, expectValidation } from "../support/Raw.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import {
  createAgent,
  detailPaths,
  expectErrorShape,
  expectRawStatus,
  expectWellFormedDetails,
  fullAgentJson,
  fullAgentYaml,
  getAgent,
  JSON_TYPE,
  listAgents,
  minimalAgentYaml,
  sendText
} from "./catalog-helpers.js"
import { yamlBytes } from "../support/Events.js"
import { expectedFullAgent } from "./agents-support.js"

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
})
