/**
 * The fast lane (src/http/Lane.ts) answers every hot endpoint (src/http/Hot.ts):
 * `POST /v1/events`, `POST /v1/runs/{id}/events` and the gateway's proxy
 * routes of the ordinary shape (streaming and budgets: test/gateway); the
 * same requests sent with a chunked body (no Content-Length) take the full
 * request pipeline and the HttpApi router. Both must answer alike: same
 * statuses, same error bodies, same decisions and usage records, and the
 * lane stamps `x-request-id` too.
 */
import { afterAll, describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { createAgent, createRun, eventBody, reply } from "../support/Events.js"
import { awaitUsage, GATEWAY_SETTINGS, gatewayTenant, type UsageMessage } from "../gateway/gateway-helpers.js"
import { startStubUpstream, USAGE } from "../gateway/stub-upstream.js"
import { bothWays, post } from "../support/LaneRequests.js"
import { createKey, tenant, type Tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer, testServerWithDatabase } from "../support/TestServer.js"

const stub = await startStubUpstream()
afterAll(() => stub.close())

const withoutIds = (body: Record<string, unknown>) => {
  const { intent_id: _i, receipt_id: _r, trace_id: _t, latency_ms: _l, ...rest } = body
  return rest
}

const AGENT = "support-bot"

const setUp = (base: string) =>
  Effect.gen(function* () {
    const owner: Tenant = yield* tenant(base)
    yield* createAgent(base, owner, AGENT)
    return owner
  })

layer(testServer("database"), SERVER_OPTIONS)("fast lane and pipeline answer alike", (it) => {
  describe("POST /v1/events", () => {
    it.effect("the same decision, each with a request id", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* setUp(base)
        const text = JSON.stringify(eventBody(owner, AGENT, reply("I can promise you a full refund.")))
        const [lane, pipeline] = yield* bothWays(base, "/v1/events", text, owner.jwt)
        expect(lane.status).toBe(200)
        expect(pipeline.status).toBe(200)
        expect(lane.body["effect"]).not.toBe("permit")
        expect(withoutIds(lane.body)).toEqual(withoutIds(pipeline.body))
        expect(lane.requestId).toMatch(/^req_/)
        expect(pipeline.requestId).toMatch(/^req_/)
      })
    )

    it.effect("a caller's x-request-id is echoed by the lane", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* setUp(base)
        const text = JSON.stringify(eventBody(owner, AGENT, reply("Hello")))
        const answer = yield* post(base, "/v1/events", text, {
          token: owner.jwt,
          chunked: false,
          requestId: "trace-42.a"
        })
        expect(answer.status).toBe(200)
        expect(answer.requestId).toBe("trace-42.a")
      })
    )

    it.effect("malformed JSON, a missing credential and an invalid body get identical errors", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* setUp(base)
        const cases: ReadonlyArray<readonly [string, string | undefined, number, string]> = [
          ['{"kind": ', owner.jwt, 400, "malformed_json"],
          [JSON.stringify(eventBody(owner, AGENT, reply("Hello"))), undefined, 401, "unauthenticated"],
          [JSON.stringify({ kind: "output.proposed" }), owner.jwt, 400, "validation_failed"],
          ['{"kind": "output.proposed", "note": "\\u0000"}', owner.jwt, 400, "validation_failed"]
        ]
        for (const [text, token, status, code] of cases) {
          const [lane, pipeline] = yield* bothWays(base, "/v1/events", text, token)
          expect(lane.status, text).toBe(status)
          expect((lane.body["error"] as { code: string }).code, text).toBe(code)
          expect(lane.body, text).toEqual(pipeline.body)
        }
      })
    )
  })

  describe("gateway proxy routes", () => {
    it.effect("an unknown route and a missing credential answer alike either way", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* setUp(base)
        const text = JSON.stringify({ model: "m", max_tokens: 5, messages: [{ role: "user", content: "hi" }] })
        const path = "/v1/gateway/gwr_missing/chat_style/chat/completions"
        const [lane, pipeline] = yield* bothWays(base, path, text, owner.jwt)
        expect(lane.status).toBe(404)
        expect(lane.body).toEqual(pipeline.body)
        const [laneAnonymous, pipelineAnonymous] = yield* bothWays(base, path, text)
        expect(laneAnonymous.status).toBe(401)
        expect(laneAnonymous.body).toEqual(pipelineAnonymous.body)
      })
    )
  })

  describe("POST /v1/runs/{id}/events", () => {
    it.effect("appends in sequence either way; an unknown run is 404 either way", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* setUp(base)
        const run = yield* createRun(base, owner, { agent_id: AGENT, kind: "chat_session" })
        const text = JSON.stringify({ kind: "user_turn", label: "hello" })
        const [lane, pipeline] = yield* bothWays(base, `/v1/runs/${run.id}/events`, text, owner.jwt)
        expect([lane.status, pipeline.status]).toEqual([201, 201])
        expect([lane.body["sequence"], pipeline.body["sequence"]]).toEqual([1, 2])
        expect(lane.body["run_id"]).toBe(run.id)

        const [laneMissing, pipelineMissing] = yield* bothWays(base, "/v1/runs/run_missing/events", text, owner.jwt)
        expect(laneMissing.status).toBe(404)
        expect(laneMissing.body).toEqual(pipelineMissing.body)
      })
    )
  })
})

/** A usage record without what differs from call to call (ids and times). */
const comparable = (usage: UsageMessage) => {
  const { id: _id, request_id: _request, effective_at: _at, ...rest } = usage
  return rest
}

layer(testServerWithDatabase("database", GATEWAY_SETTINGS), SERVER_OPTIONS)("the gateway either way", (it) => {
  it.effect("a proxied call answers and is recorded alike on the lane and the pipeline, in both dialects", () =>
    Effect.gen(function* () {
      const { base, db, owner, gateway } = yield* gatewayTenant(stub.url)
      const key = yield* createKey(owner)
      const dialects = [
        [
          "chat_style/chat/completions",
          { model: "stub-chat", max_tokens: 5, messages: [{ role: "user", content: "hi" }] }
        ],
        [
          "messages_style/v1/messages",
          { model: "stub-messages", max_tokens: 5, messages: [{ role: "user", content: "hi" }] }
        ]
      ] as const
      for (const [suffix, body] of dialects) {
        const path = `/v1/gateway/${gateway.routeId}/${suffix}`
        const [lane, pipeline] = yield* bothWays(base, path, JSON.stringify(body), key.plaintext_key)
        expect([lane.status, pipeline.status], suffix).toEqual([200, 200])
        expect(lane.body, suffix).toEqual(pipeline.body)
        expect(lane.requestId).toMatch(/^req_/)
      }
      // Two calls a dialect, each recorded once with the same usage, whichever way it came in.
      const usage = yield* awaitUsage(db, owner.workspaceId, 4)
      for (const [dialect, promptTokens] of [
        ["chat_style", USAGE.chat.prompt_tokens],
        ["messages_style", USAGE.messages.input_tokens]
      ] as const) {
        const [first, second, ...rest] = usage
          .filter((record) => JSON.stringify(record.metadata).includes(`"dialect":"${dialect}"`))
          .map(comparable)
        expect(rest).toEqual([])
        expect(first).toEqual(second)
        expect(first?.prompt_tokens).toBe(promptTokens)
      }
    })
  )
})
