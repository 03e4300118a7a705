/**
 * `POST /v1/events` over HTTP against the real service and PostgreSQL
 * (database event log): every decision carries intent_id (stable per
 * intent), receipt_id, trace_id and an integer latency_ms; and the
 * 400/403/404 answers for bad principals (workspace, environment, runtime
 * key) and bodies. Profile checks and policies are in
 * events-profiles-policies-http.test.ts.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { clientAt, expectFailure } from "../support/Api.js"
import { call, expectError, expectValidation } from "../support/Raw.js"
import { createEnvironment, createKey, tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import { eventBody, propose, proposeCall, reply } from "../support/Events.js"
import { AGENT, OTHER_AGENT, setUp } from "./events-support.js"

layer(testServer("database"), SERVER_OPTIONS)("POST /v1/events (database event log)", (it) => {
  describe("identity of a decision", () => {
    it.effect("intent_id is stable for the same intent; receipt_id and trace_id are new on every call", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* setUp(base)
        const action = { operation: "lookup_order", params: { id: "o-1", expand: ["items"] } }
        const first = yield* propose(base, owner, AGENT, action, { session_id: "s-1" })
        const second = yield* propose(base, owner, AGENT, action, { session_id: "s-2", metadata: { turn: 2 } })
        expect(second.intent_id).toBe(first.intent_id)
        expect(second.receipt_id).not.toBe(first.receipt_id)
        expect(second.trace_id).not.toBe(first.trace_id)
        // Key order in the body does not change the intent.
        const reordered = yield* propose(base, owner, AGENT, {
          params: { expand: ["items"], id: "o-1" },
          operation: "lookup_order"
        })
        expect(reordered.intent_id).toBe(first.intent_id)

        const otherParams = yield* propose(base, owner, AGENT, { ...action, params: { id: "o-2", expand: ["items"] } })
        const otherAgent = yield* propose(base, owner, OTHER_AGENT, action)
        const ids = new Set([first.intent_id, otherParams.intent_id, otherAgent.intent_id])
        expect(ids.size).toBe(3)

        // The same proposal in another workspace is another intent.
        const stranger = yield* setUp(base)
        const theirs = yield* propose(base, stranger, AGENT, action)
        expect(theirs.intent_id).not.toBe(first.intent_id)

        for (const decision of [first, second, reordered, otherParams, otherAgent, theirs]) {
          expect(Number.isInteger(decision.latency_ms)).toBe(true)
          expect(decision.latency_ms).toBeGreaterThanOrEqual(0)
        }
      })
    )
  })

  describe("principal and body", () => {
    it.effect("principal.workspace_id of another workspace (or an unknown one) is 404", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* setUp(base)
        const stranger = yield* tenant(base)
        for (const workspace_id of [stranger.workspaceId, "ws_does_not_exist"]) {
          yield* expectFailure(
            proposeCall(base, owner, AGENT, reply("hello"), {
              workspace_id,
              environment_id: stranger.defaultEnvironmentId
            }),
            404
          )
        }
        // Nothing was decided in the other workspace.
        const traces = yield* stranger.api.traces.listTraces({ urlParams: {} })
        expect(traces.traces).toEqual([])
      })
    )

    it.effect("an unknown environment_id, or another workspace's, is 404 environment_not_found", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* setUp(base)
        const stranger = yield* tenant(base)
        for (const environment_id of ["env_nope", stranger.defaultEnvironmentId]) {
          yield* expectFailure(
            proposeCall(base, owner, AGENT, reply("hello"), { environment_id }),
            404,
            "environment_not_found"
          )
        }
      })
    )

    it.effect("an environment created a moment ago is accepted at once", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* setUp(base)
        // A first decision loads the workspace's runtime configuration.
        yield* propose(base, owner, AGENT, reply("hello"))
        const staging = yield* createEnvironment(owner)
        // The typed call succeeds only on the contract's 200.
        yield* proposeCall(base, owner, AGENT, reply("hello"), { environment_id: staging.id })
      })
    )

    it.effect("a runtime key answers for its own environment and is 403 for another one", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* setUp(base)
        const staging = yield* createEnvironment(owner)
        const stagingKey = yield* createKey(owner, { environment_id: staging.id })
        const defaultKey = yield* createKey(owner)

        yield* expectFailure(
          proposeCall(base, owner, AGENT, reply("hello"), { token: stagingKey.plaintext_key }),
          403,
          "environment_mismatch"
        )

        const own = yield* propose(base, owner, AGENT, reply("I can give you a full refund"), {
          token: stagingKey.plaintext_key,
          environment_id: staging.id
        })
        expect(own.effect).toBe("deny")
        const byDefaultKey = yield* propose(base, owner, AGENT, reply("hello"), { token: defaultKey.plaintext_key })
        expect(byDefaultKey.effect).toBe("permit")
        yield* expectFailure(
          proposeCall(base, owner, AGENT, reply("hello"), {
            token: defaultKey.plaintext_key,
            environment_id: staging.id
          }),
          403,
          "environment_mismatch"
        )
        // No credential at all is 401.
        const anonymous = yield* clientAt(base)
        yield* expectFailure(anonymous.events.authorizeEvent({ payload: eventBody(owner, AGENT, reply("hello")) }), 401)
      })
    )

    it.effect("a missing principal field is 400 naming its path (a session may leave workspace_id out)", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* setUp(base)
        const full = eventBody(owner, AGENT, reply("hello"))
        for (const field of ["agent_id", "environment_id"] as const) {
          const { [field]: _dropped, ...principal } = full.principal
          const response = yield* call(base, "POST", "/v1/events", {
            token: owner.jwt,
            body: { ...full, principal }
          })
          expectValidation(response, `principal.${field}`)
        }
        const { principal: _principal, ...noPrincipal } = full
        expectValidation(yield* call(base, "POST", "/v1/events", { token: owner.jwt, body: noPrincipal }), "principal")
        const { action: _action, ...noAction } = full
        expectValidation(yield* call(base, "POST", "/v1/events", { token: owner.jwt, body: noAction }), "action")
        expectValidation(
          yield* call(base, "POST", "/v1/events", { token: owner.jwt, body: { ...full, action: { content: "hi" } } }),
          "action.operation"
        )
        expectValidation(
          yield* call(base, "POST", "/v1/events", {
            token: owner.jwt,
            body: { ...full, principal: { ...full.principal, agent_id: 42 } }
          }),
          "principal.agent_id"
        )
      })
    )

    it.effect("a kind other than the three event kinds is 400 naming kind", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* setUp(base)
        const full = eventBody(owner, AGENT, reply("hello"))
        for (const kind of ["output.sent", "OUTPUT.PROPOSED", "", 7]) {
          expectValidation(
            yield* call(base, "POST", "/v1/events", { token: owner.jwt, body: { ...full, kind } }),
            "kind"
          )
        }
        const { kind: _kind, ...noKind } = full
        expectValidation(yield* call(base, "POST", "/v1/events", { token: owner.jwt, body: noKind }), "kind")
        // Malformed JSON is 400 too, never a 500.
        expectError(yield* call(base, "POST", "/v1/events", { token: owner.jwt, raw: '{"kind": ' }), 400)
      })
    )
  })
})
