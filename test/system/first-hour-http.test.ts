/**
 * What a new user meets in the first hour, over HTTP against the real
 * service: `GET /v1/me` and the workspace id on sessions and keys, events
 * whose principal leaves workspace and environment to the runtime key,
 * validation errors listing every failing path and every allowed value,
 * `GET /v1/traces/{trace_id}`, unknown agents, a policy draft created as
 * is, and `group_by=agent` of LLM usage.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { clientAt, expectFailure } from "../support/Api.js"
import { createAgent, propose, reply } from "../support/Events.js"
import { call, expectError } from "../support/Raw.js"
import { createEnvironment, createKey, keyClient, tenant } from "../support/Tenants.js"
import { until } from "../support/Eventually.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"

const AGENT = "support-bot"

layer(testServer("database"), SERVER_OPTIONS)("first hour", (it) => {
  describe("GET /v1/me and workspace ids", () => {
    it.effect("sessions, key creation and /v1/me name the workspace", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const anonymous = yield* clientAt(base)
        const login = yield* anonymous.auth.login({ payload: { username: owner.username, password: owner.password } })
        expect(login.workspace_id).toBe(owner.workspaceId)

        const me = yield* owner.api.me.getMe({})
        expect(me).toEqual({
          kind: "user",
          principal_id: owner.user_id,
          user_id: owner.user_id,
          api_key_id: null,
          workspace_id: owner.workspaceId,
          environment_id: null,
          role: "owner",
          feature_flags: { is_attacks_enabled: true, is_knowledge_base_enabled: true, is_mcp_gateway_enabled: true }
        })

        const key = yield* createKey(owner)
        expect(key.workspace_id).toBe(owner.workspaceId)
        const asKey = yield* (yield* keyClient(base, key)).me.getMe({})
        expect(asKey).toMatchObject({
          kind: "runtime_key",
          api_key_id: key.api_key.id,
          user_id: null,
          workspace_id: owner.workspaceId,
          environment_id: owner.defaultEnvironmentId,
          role: "member"
        })
        yield* expectFailure(anonymous.me.getMe({}), 401)
      })
    )
  })

  describe("POST /v1/events", () => {
    it.effect(
      "a runtime key may leave principal.workspace_id and environment_id out; another value names the expected one",
      () =>
        Effect.gen(function* () {
          const base = yield* baseUrl
          const owner = yield* tenant(base)
          yield* createAgent(base, owner, AGENT)
          const key = yield* createKey(owner)
          const bare = { kind: "output.proposed", principal: { agent_id: AGENT }, action: reply("hello") }
          const answered = yield* call(base, "POST", "/v1/events", { token: key.plaintext_key, body: bare })
          expect(answered.status, answered.text).toBe(200)
          expect((answered.body as { effect: string }).effect).toBe("permit")

          const staging = yield* createEnvironment(owner)
          const wrongEnvironment = yield* call(base, "POST", "/v1/events", {
            token: key.plaintext_key,
            body: { ...bare, principal: { agent_id: AGENT, environment_id: staging.id } }
          })
          expect(expectError(wrongEnvironment, 403, "environment_mismatch").message).toContain(
            owner.defaultEnvironmentId
          )
          const wrongWorkspace = yield* call(base, "POST", "/v1/events", {
            token: key.plaintext_key,
            body: { ...bare, principal: { agent_id: AGENT, workspace_id: "ws_elsewhere" } }
          })
          expect(expectError(wrongWorkspace, 404, "workspace_not_found").message).toContain(owner.workspaceId)
        })
    )

    it.effect("a refusal lists every failing path at once, and an enum error every allowed value", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        yield* createAgent(base, owner, AGENT)
        const trace = yield* propose(base, owner, AGENT, reply("hello"))
        // The fast lane answers POST /v1/events.
        const bad = { kind: "output.sent", principal: { agent_id: 42 }, action: {} }
        const response = yield* call(base, "POST", "/v1/events", { token: owner.jwt, body: bad })
        const error = expectError(response, 400, "validation_failed")
        expect(error.details?.map((detail) => detail.path).sort()).toEqual([
          "action.operation",
          "kind",
          "principal.agent_id"
        ])
        expect(error.message).toContain("(and 2 more; see details)")

        // The request pipeline answers review events.
        const review = yield* call(base, "POST", `/v1/traces/${trace.trace_id}/review-events`, {
          token: owner.jwt,
          body: { outcome: "approve", reason_codes: "none" }
        })
        const refusal = expectError(review, 400, "validation_failed")
        expect(refusal.details?.map((detail) => detail.path)).toEqual(["outcome", "reason_codes"])
        expect(refusal.details?.[0]?.message).toBe(
          'Expected one of "accepted" | "corrected" | "false_positive" | "ignored" | "missed_issue" | "rejected", actual "approve"'
        )

        // And a query string: every failing parameter at once.
        const listed = yield* call(base, "GET", "/v1/traces?limit=many&effect=maybe", { token: owner.jwt })
        const query = expectError(listed, 400, "validation_failed")
        expect([...new Set(query.details?.map((detail) => detail.path))].sort()).toEqual(["effect", "limit"])

        // A path parameter and the body failing together: both in one answer.
        const install = yield* call(base, "POST", "/v1/policies/packs/Not_A_Pack/install", {
          token: owner.jwt,
          body: { enabled: "yes" }
        })
        const both = expectError(install, 400, "validation_failed")
        expect(both.details?.map((detail) => detail.path)).toEqual(["name", "enabled"])
      })
    )
  })

  describe("unregistered agents", () => {
    it.effect("an event for an agent the workspace does not know gets a finding with the default action's effect", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const permitted = yield* propose(base, owner, "typo-bot", reply("Your order ships tomorrow."))
        expect(permitted.effect).toBe("permit")
        const [finding] = permitted.findings
        expect(permitted.findings).toHaveLength(1)
        expect(finding).toMatchObject({ source: "profile", effect: "permit", requirement_id: "agent.registered" })
        expect(finding?.reason).toContain("typo-bot is not registered")

        yield* owner.api.settings.updateSettings({ payload: { default_action: "deny" } })
        // Settings reach decisions within a second (cached runtime config).
        const denied = yield* until(
          Effect.tap(propose(base, owner, "typo-bot", reply("Your order ships tomorrow.")), (decision) =>
            expect(decision.effect).toBe("deny")
          )
        )
        expect(denied.findings.map((f) => [f.requirement_id, f.effect])).toEqual([["agent.registered", "deny"]])
        expect(denied.reason).toContain("typo-bot is not registered")

        // A registered agent has no such finding.
        yield* createAgent(base, owner, AGENT)
        yield* owner.api.settings.updateSettings({ payload: { default_action: "permit" } })
        const known = yield* until(
          Effect.tap(propose(base, owner, AGENT, reply("Your order ships tomorrow.")), (decision) =>
            expect(decision.effect).toBe("permit")
          )
        )
        expect(known.findings).toEqual([])
      })
    )
  })

  describe("POST /v1/policies/draft", () => {
    it.effect("answers a document POST /v1/policies creates as is", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        for (const prompt of [
          "never promise a refund",
          "rewrite damn as darn",
          "require approval before refund_order"
        ]) {
          const drafted = yield* call(base, "POST", "/v1/policies/draft", { token: owner.jwt, body: { prompt } })
          expect(drafted.status, drafted.text).toBe(200)
          const draft = (drafted.body as { draft: { id: string } }).draft
          const created = yield* call(base, "POST", "/v1/policies", { token: owner.jwt, body: draft })
          expect(created.status, created.text).toBe(201)
          expect(created.body).toMatchObject({ id: draft.id, enabled: false })
        }
      })
    )
  })

  describe("GET /v1/traces/{trace_id}", () => {
    it.effect("answers one trace of the workspace, 404 for another workspace's", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        yield* createAgent(base, owner, AGENT)
        const decision = yield* propose(base, owner, AGENT, reply("hello"))
        const trace = yield* owner.api.traces.getTrace({ path: { trace_id: decision.trace_id } })
        expect(trace.trace_id).toBe(decision.trace_id)
        expect(trace.decision).toBe("permit")
        const { traces } = yield* owner.api.traces.listTraces({ urlParams: {} })
        expect(traces[0]).toEqual(trace)
        const stranger = yield* tenant(base)
        yield* expectFailure(
          stranger.api.traces.getTrace({ path: { trace_id: decision.trace_id } }),
          404,
          "trace_not_found"
        )
      })
    )
  })
})
