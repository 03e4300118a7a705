/**
 * `GET /v1/llm-usage?group_by=` over a workspace whose usage has more
 * distinct keys than MAX_USAGE_GROUPS (a principal per end user, say): the
 * grouped answer would be unbounded, so it is a 400 naming `group_by` (the
 * database stops reading one group past the cap); narrowed by a filter or
 * grouped by day it answers.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { MAX_USAGE_GROUPS } from "../../src/billing/UsageStore.js"
import { call } from "../support/Raw.js"
import { seededTenant } from "../support/Seeded.js"
import { SERVER_OPTIONS, testServerWithDatabase } from "../support/TestServer.js"
import { usageGroupsOf } from "./billing-helpers.js"

const PRINCIPALS = MAX_USAGE_GROUPS + 1

layer(testServerWithDatabase("database"), SERVER_OPTIONS)("llm-usage group_by bound", (it) => {
  it.effect("group_by past MAX_USAGE_GROUPS is a 400 naming group_by; filtered or by day it answers", () =>
    Effect.gen(function* () {
      // One usage record per principal, all on one day (volume seeded directly: the gateway would take minutes).
      const { base, owner } = yield* seededTenant(
        `insert into llm_usage_events (id, workspace_id, principal_id, request_id, kind, model, prompt_tokens,
                                       completion_tokens, currency, cost_minor, cost_usd_nanos, effective_at)
         select 'llu_bound_' || $1 || '_' || i, $1, 'prn_' || i, 'req_' || i, 'customer_inference', 'gpt-4o-mini',
                10, 5, 'USD', 1, 1000, '2026-03-01T10:00:00Z'::timestamptz
         from generate_series(1, $2::int) i`,
        [PRINCIPALS]
      )
      const grouped = (query: string) => call(base, "GET", `/v1/llm-usage?${query}`, { token: owner.jwt })

      const byPrincipal = yield* grouped("group_by=principal")
      expect(byPrincipal.status).toBe(400)
      expect(JSON.stringify(byPrincipal.body)).toContain("group_by")

      const narrowed = yield* grouped("group_by=principal&principal_id=prn_7")
      expect(narrowed.status).toBe(200)
      expect(narrowed.body).toMatchObject({ groups: [{ key: "prn_7", event_count: 1 }] })

      const byDay = yield* owner.api.llmUsage.listLlmUsage({ urlParams: { group_by: "day" } })
      expect(usageGroupsOf(byDay).groups).toEqual([
        expect.objectContaining({ key: "2026-03-01", event_count: PRINCIPALS, cost_minor: PRINCIPALS })
      ])
    })
  )
})
