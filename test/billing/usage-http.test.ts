/**
 * `GET /v1/llm-usage` over the real service with the Kafka event log: usage
 * produced as the gateway produces it (llm-usage messages through the
 * outbox), stored once by the stream worker, listed with every filter,
 * paged, grouped by day, principal and model, and bad queries answered 400.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { call, createKey, expectStatus, expectValidation, SERVER_OPTIONS, tenant } from "../identity/http-helpers.js"
import { until } from "../authorization-http/event-helpers.js"
import { baseUrl } from "../support/TestServer.js"
import { testServer } from "../support/TestServer.js"
import { publishUsage, usageMessage } from "./billing-helpers.js"

interface UsageEventBody {
  readonly id: string
  readonly principal_id: string | null
  readonly model: string
  readonly kind: string
  readonly prompt_tokens: number
  readonly completion_tokens: number
  readonly cost_minor: number
  readonly cost_usd_nanos: string
  readonly effective_at: string
  readonly unpriced: boolean
  readonly workspace_id: string
}

interface GroupBody {
  readonly key: string | null
  readonly prompt_tokens: number
  readonly completion_tokens: number
  readonly cost_minor: number
  readonly cost_usd_nanos: string
  readonly event_count: number
}

const usage = (base: string, token: string, query: Record<string, string>) =>
  call(base, "GET", `/v1/llm-usage?${new URLSearchParams(query).toString()}`, { token })

const idsOf = (body: unknown) => (body as { events: Array<UsageEventBody> }).events.map((event) => event.id)

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
        Effect.map(usage(base, owner.jwt, {}), (response) =>
          expect(idsOf(expectStatus(response, 200))).toHaveLength(4)
        ),
        "30 seconds"
      )
      // Redelivery: the same records again (new event ids), and one with its very event id.
      yield* publishUsage([e1, e2])
      yield* publishUsage([e3], [firstIds[2]!])
      yield* publishUsage([e5])

      // Same key, same partition, in order: once e5 is stored every duplicate before it was seen.
      const all = yield* until(
        Effect.map(usage(base, owner.jwt, {}), (response) => {
          const ids = idsOf(expectStatus(response, 200))
          expect(ids).toContain(e5.id)
          return ids
        }),
        "30 seconds"
      )
      expect(all).toEqual([e5.id, e4.id, e3.id, e2.id, e1.id])

      const listed = (expectStatus(yield* usage(base, owner.jwt, {}), 200) as { events: Array<UsageEventBody> }).events
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
      const cases: ReadonlyArray<readonly [Record<string, string>, ReadonlyArray<string>]> = [
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
        expect(idsOf(expectStatus(yield* usage(base, owner.jwt, query), 200)), JSON.stringify(query)).toEqual(expected)
      }

      // Pages, newest first.
      const first = expectStatus(yield* usage(base, owner.jwt, { limit: "2" }), 200) as { next_cursor?: string }
      expect(idsOf(first)).toEqual([e5.id, e4.id])
      const second = expectStatus(yield* usage(base, owner.jwt, { limit: "2", cursor: first.next_cursor! }), 200) as {
        next_cursor?: string
      }
      expect(idsOf(second)).toEqual([e3.id, e2.id])
      const third = expectStatus(yield* usage(base, owner.jwt, { limit: "2", cursor: second.next_cursor! }), 200) as {
        next_cursor?: string
      }
      expect(idsOf(third)).toEqual([e1.id])
      expect(third.next_cursor).toBeUndefined()

      // group_by day: UTC days in order, exact sums (usd nanos beyond 2^53 stay exact).
      const byDay = expectStatus(yield* usage(base, owner.jwt, { group_by: "day" }), 200)
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
      const byKey = (body: unknown) =>
        [...(body as { groups: Array<GroupBody> }).groups].sort((a, b) => String(a.key).localeCompare(String(b.key)))
      const byPrincipal = expectStatus(yield* usage(base, owner.jwt, { group_by: "principal" }), 200)
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
      const byModel = expectStatus(
        yield* usage(base, owner.jwt, { group_by: "model", start: "2026-03-01T12:00:00Z" }),
        200
      )
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
      expect(expectStatus(yield* usage(base, owner.jwt, { group_by: "day", principal_id: "nobody" }), 200)).toEqual({
        group_by: "day",
        groups: []
      })

      // Another workspace sees none of it; a runtime key of the workspace may read it.
      expect(idsOf(expectStatus(yield* usage(base, other.jwt, {}), 200))).toEqual([])
      expect(expectStatus(yield* usage(base, other.jwt, { group_by: "model" }), 200).groups).toEqual([])
      const key = yield* createKey(base, owner)
      expect(idsOf(expectStatus(yield* usage(base, key.plaintext_key, { kind: "guardrail" }), 200))).toEqual([
        e4.id,
        e3.id
      ])
    })
  )

  it.effect("bad filters answer 400 validation_failed naming the parameter", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const bad: ReadonlyArray<readonly [Record<string, string>, string]> = [
        [{ start: "yesterday" }, "start"],
        [{ start: "2026-03-01" }, "start"],
        [{ start: "2026-03-01T00:00:00" }, "start"],
        [{ end: "2026-13-01T00:00:00Z" }, "end"],
        [{ end: "2026-02-30T00:00:00Z" }, "end"],
        [{ end: "2026-03-01T24:00:00Z" }, "end"],
        [{ start: "2026-03-01T00:00:00+25:00" }, "start"],
        [{ start: "1772323200000" }, "start"],
        [{ start: "2026-03-02T00:00:00Z", end: "2026-03-01T00:00:00Z" }, "end"],
        [{ kind: "training" }, "kind"],
        [{ group_by: "week" }, "group_by"],
        [{ limit: "-1" }, "limit"],
        [{ limit: "ten" }, "limit"],
        [{ cursor: "not-a-cursor" }, "cursor"]
      ]
      for (const [query, path] of bad) {
        expectValidation(yield* usage(base, owner.jwt, query), path)
      }
      // Lowercase separators are RFC 3339 too.
      expect(expectStatus(yield* usage(base, owner.jwt, { start: "2026-03-01t00:00:00z" }), 200)).toEqual({
        events: []
      })
      expect((yield* call(base, "GET", "/v1/llm-usage")).status).toBe(401)
    })
  )
})
