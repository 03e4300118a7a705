/**
 * `GET /v1/llm-usage` over the real service with the Kafka event log: usage
 * produced as the gateway produces it (llm-usage messages through the
 * outbox), stored once by the stream worker, listed with every filter,
 * paged, grouped by day, principal and model, and bad queries answered 400.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import type { LlmUsageResponse } from "../../src/billing/Domain.js"
import { expectInvalid, type GuardrailClient } from "../support/Api.js"
import { call, expectValidation } from "../support/Raw.js"
import { createKey, keyClient, tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import { publishUsage, usageGroupsOf, usageMessage, usageRecordsOf } from "./billing-helpers.js"
import { until } from "../support/Eventually.js"

type UsageAnswer = typeof LlmUsageResponse.Type
type UsageQuery = Parameters<GuardrailClient["llmUsage"]["listLlmUsage"]>[0]["urlParams"]

const usage = (api: GuardrailClient, urlParams: UsageQuery = {}) => api.llmUsage.listLlmUsage({ urlParams })

const idsOf = (answer: UsageAnswer) => usageRecordsOf(answer).events.map((event) => event.id)

layer(testServer("kafka"), SERVER_OPTIONS)("GET /v1/llm-usage (Kafka event log)", (it) => {
  it.effect("stores each usage record once, filters, pages and groups it", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const other = yield* tenant(base)
      const ws = owner.workspaceId
      const e1 = usageMessage({ workspaceId: ws, effectiveAt: "2026-03-01T10:00:00.000Z", principalId: "prn_a" })
      const e2 = usageMessage({
        workspaceId: ws,
        effectiveAt: "2026-03-01T23:59:59.999Z",
        principalId: "prn_b",
        model: "claude-3-5-haiku",
        promptTokens: 200,
        completionTokens: 80,
        costMinor: 25
      })
      const e3 = usageMessage({
        workspaceId: ws,
        effectiveAt: "2026-03-02T00:00:00.000Z",
        principalId: "prn_a",
        kind: "guardrail",
        promptTokens: 30,
        completionTokens: 5,
        costMinor: 1,
        costUsdNanos: "9007199254740993"
      })
      const e4 = usageMessage({
        workspaceId: ws,
        effectiveAt: "2026-03-02T12:00:00.000Z",
        principalId: null,
        kind: "guardrail",
        promptTokens: 40,
        completionTokens: 6,
        costMinor: 2,
        costUsdNanos: "7"
      })
      const e5 = usageMessage({
        workspaceId: ws,
        effectiveAt: "2026-03-03T08:00:00.000Z",
        principalId: "prn_b",
        model: "GPT-4o-Mini",
        promptTokens: 10,
        completionTokens: 10,
        costMinor: 3
      })
      const firstIds = yield* publishUsage([e1, e2, e3, e4])
      yield* until(
        Effect.map(usage(owner.api), (answer) => expect(idsOf(answer)).toHaveLength(4)),
        "30 seconds"
      )
      // Redelivery: the same records again (new event ids), and one with its very event id.
      yield* publishUsage([e1, e2])
      yield* publishUsage([e3], [firstIds[2]!])
      yield* publishUsage([e5])

      // Same key, same partition, in order: once e5 is stored every duplicate before it was seen.
      const all = yield* until(
        Effect.map(usage(owner.api), (answer) => {
          const ids = idsOf(answer)
          expect(ids).toContain(e5.id)
          return ids
        }),
        "30 seconds"
      )
      expect(all).toEqual([e5.id, e4.id, e3.id, e2.id, e1.id])

      const listed = usageRecordsOf(yield* usage(owner.api)).events
      expect(listed[2]).toMatchObject({
        id: e3.id,
        workspace_id: ws,
        principal_id: "prn_a",
        model: "gpt-4o-mini",
        kind: "guardrail",
        prompt_tokens: 30,
        completion_tokens: 5,
        cost_minor: 1,
        cost_usd_nanos: "9007199254740993",
        effective_at: "2026-03-02T00:00:00.000Z",
        unpriced: false
      })

      // Filters, alone and together; start inclusive, end exclusive, any RFC 3339 offset.
      const cases: ReadonlyArray<readonly [UsageQuery, ReadonlyArray<string>]> = [
        [{ principal_id: "prn_a" }, [e3.id, e1.id]],
        [{ model: "gpt-4o-mini" }, [e4.id, e3.id, e1.id]],
        [{ model: "GPT-4o-Mini" }, [e5.id]],
        [{ kind: "guardrail" }, [e4.id, e3.id]],
        [{ kind: "customer_inference" }, [e5.id, e2.id, e1.id]],
        [{ start: "2026-03-02T00:00:00.000Z" }, [e5.id, e4.id, e3.id]],
        [{ end: "2026-03-02T00:00:00.000Z" }, [e2.id, e1.id]],
        [{ start: "2026-03-02T01:00:00+01:00", end: "2026-03-02T12:00:00Z" }, [e3.id]],
        [{ start: "2026-03-01T23:59:59.999Z", end: "2026-03-01T23:59:59.999Z" }, []],
        [{ principal_id: "prn_b", kind: "customer_inference", start: "2026-03-02T00:00:00Z" }, [e5.id]],
        [{ principal_id: "nobody" }, []]
      ]
      for (const [query, expected] of cases) {
        expect(idsOf(yield* usage(owner.api, query)), JSON.stringify(query)).toEqual(expected)
      }

      // Pages, newest first.
      const first = usageRecordsOf(yield* usage(owner.api, { limit: 2 }))
      expect(idsOf(first)).toEqual([e5.id, e4.id])
      const second = usageRecordsOf(yield* usage(owner.api, { limit: 2, cursor: first.next_cursor! }))
      expect(idsOf(second)).toEqual([e3.id, e2.id])
      const third = usageRecordsOf(yield* usage(owner.api, { limit: 2, cursor: second.next_cursor! }))
      expect(idsOf(third)).toEqual([e1.id])
      expect(third.next_cursor).toBeUndefined()

      // group_by day: UTC days in order, exact sums (usd nanos beyond 2^53 stay exact).
      const byDay = yield* usage(owner.api, { group_by: "day" })
      expect(byDay).toEqual({
        group_by: "day",
        groups: [
          {
            key: "2026-03-01",
            event_count: 2,
            prompt_tokens: 300,
            completion_tokens: 130,
            cost_minor: 35,
            cost_usd_nanos: "350000000"
          },
          {
            key: "2026-03-02",
            event_count: 2,
            prompt_tokens: 70,
            completion_tokens: 11,
            cost_minor: 3,
            cost_usd_nanos: "9007199254741000"
          },
          {
            key: "2026-03-03",
            event_count: 1,
            prompt_tokens: 10,
            completion_tokens: 10,
            cost_minor: 3,
            cost_usd_nanos: "30000000"
          }
        ]
      })
      const byKey = (answer: UsageAnswer) =>
        [...usageGroupsOf(answer).groups].sort((a, b) => String(a.key).localeCompare(String(b.key)))
      const byPrincipal = usageGroupsOf(yield* usage(owner.api, { group_by: "principal" }))
      expect(byPrincipal.group_by).toBe("principal")
      expect(byKey(byPrincipal)).toEqual([
        { key: null, event_count: 1, prompt_tokens: 40, completion_tokens: 6, cost_minor: 2, cost_usd_nanos: "7" },
        {
          key: "prn_a",
          event_count: 2,
          prompt_tokens: 130,
          completion_tokens: 55,
          cost_minor: 11,
          cost_usd_nanos: "9007199354740993"
        },
        {
          key: "prn_b",
          event_count: 2,
          prompt_tokens: 210,
          completion_tokens: 90,
          cost_minor: 28,
          cost_usd_nanos: "280000000"
        }
      ])
      // group_by agent: every event here came through the route of support-bot.
      const byAgent = usageGroupsOf(yield* usage(owner.api, { group_by: "agent" }))
      expect(byAgent.group_by).toBe("agent")
      expect(byAgent.groups.map((group) => [group.key, group.event_count])).toEqual([["support-bot", 5]])
      const byModel = usageGroupsOf(yield* usage(owner.api, { group_by: "model", start: "2026-03-01T12:00:00Z" }))
      expect(byModel.group_by).toBe("model")
      expect(byKey(byModel)).toEqual(
        [
          {
            key: "claude-3-5-haiku",
            event_count: 1,
            prompt_tokens: 200,
            completion_tokens: 80,
            cost_minor: 25,
            cost_usd_nanos: "250000000"
          },
          {
            key: "gpt-4o-mini",
            event_count: 2,
            prompt_tokens: 70,
            completion_tokens: 11,
            cost_minor: 3,
            cost_usd_nanos: "9007199254741000"
          },
          {
            key: "GPT-4o-Mini",
            event_count: 1,
            prompt_tokens: 10,
            completion_tokens: 10,
            cost_minor: 3,
            cost_usd_nanos: "30000000"
          }
        ].sort((a, b) => a.key.localeCompare(b.key))
      )
      expect(yield* usage(owner.api, { group_by: "day", principal_id: "nobody" })).toEqual({
        group_by: "day",
        groups: []
      })

      // Another workspace sees none of it; a runtime key of the workspace may read it.
      expect(idsOf(yield* usage(other.api))).toEqual([])
      expect(usageGroupsOf(yield* usage(other.api, { group_by: "model" })).groups).toEqual([])
      const key = yield* keyClient(base, yield* createKey(owner))
      expect(idsOf(yield* usage(key, { kind: "guardrail" }))).toEqual([e4.id, e3.id])
    })
  )

  it.effect("bad filters answer 400 validation_failed naming the parameter", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      // Values the contract's schema refuses: the typed client cannot send them.
      const malformed: ReadonlyArray<readonly [Record<string, string>, string]> = [
        [{ start: "yesterday" }, "start"],
        [{ start: "2026-03-01" }, "start"],
        [{ start: "2026-03-01T00:00:00" }, "start"],
        [{ end: "2026-13-01T00:00:00Z" }, "end"],
        [{ end: "2026-02-30T00:00:00Z" }, "end"],
        [{ end: "2026-03-01T24:00:00Z" }, "end"],
        [{ start: "2026-03-01T00:00:00+25:00" }, "start"],
        [{ start: "1772323200000" }, "start"],
        [{ kind: "training" }, "kind"],
        [{ group_by: "week" }, "group_by"],
        [{ limit: "-1" }, "limit"],
        [{ limit: "ten" }, "limit"]
      ]
      for (const [query, path] of malformed) {
        expectValidation(
          yield* call(base, "GET", `/v1/llm-usage?${new URLSearchParams(query).toString()}`, { token: owner.jwt }),
          path
        )
      }
      // Well-formed values the service refuses.
      yield* expectInvalid(usage(owner.api, { start: "2026-03-02T00:00:00Z", end: "2026-03-01T00:00:00Z" }), "end")
      yield* expectInvalid(usage(owner.api, { cursor: "not-a-cursor" }), "cursor")
      // Lowercase separators are RFC 3339 too.
      expect(yield* usage(owner.api, { start: "2026-03-01t00:00:00z" })).toEqual({ events: [] })
      // So are offsets up to 23:59, which PostgreSQL's own reading of the text refuses past 15:59.
      expect(yield* usage(owner.api, { start: "2026-03-01T00:00:00+23:59" })).toEqual({ events: [] })
      expect((yield* call(base, "GET", "/v1/llm-usage")).status).toBe(401)
    })
  )
})
