/**
 * Analytics queries whose answer has no natural bound: an hourly series with
 * no range over years of buckets, a group_by over every principal, a p95 per
 * principal. Each is a 400 naming the field to narrow once it would answer
 * more than MAX_QUERY_POINTS points (the database stops reading one cell past
 * it); the same queries narrowed answer 200.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { MAX_QUERY_POINTS } from "../../src/analytics/Query.js"
import { queryDatabase } from "../support/Database.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, TestDatabaseUrl, testServerWithDatabase } from "../support/TestServer.js"
import { queryRaw } from "./analytics-helpers.js"

const HOURS = MAX_QUERY_POINTS + 1
const FROM = "2024-01-01T00:00:00Z"

layer(testServerWithDatabase("database"), SERVER_OPTIONS)("analytics query bounds", (it) => {
  it.effect("a query past MAX_QUERY_POINTS is a 400 naming interval or group_by; narrowed it answers", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const url = yield* TestDatabaseUrl
      const owner = yield* tenant(base)
      // One hour bucket per hour over HOURS hours, and one day bucket per principal (HOURS principals).
      yield* queryDatabase(
        url,
        `insert into analytics_buckets (workspace_id, granularity, bucket_start, series, dims, value, sketch)
         select $1, 'hour', $2::timestamptz + make_interval(hours => i), 'decisions', '{}', 1, null
         from generate_series(0, $3 - 1) i
         union all
         select $1, 'day', $2::timestamptz, 'decisions', jsonb_build_object('principal_id', 'p' || i), 1,
                array_fill(0::bigint, array[128])
         from generate_series(0, $3 - 1) i`,
        [owner.workspaceId, FROM, HOURS]
      )
      const status = (body: Record<string, unknown>) => queryRaw(base, owner, { metric: "trace_count", ...body })

      const hourly = yield* status({ interval: "hour" })
      expect(hourly.status).toBe(400)
      expect(JSON.stringify(hourly.body)).toContain("interval")
      const narrowed = yield* status({ interval: "hour", start: FROM, end: "2024-01-08T00:00:00Z" })
      expect(narrowed.status).toBe(200)

      const grouped = yield* status({ group_by: "principal_id" })
      expect(grouped.status).toBe(400)
      expect(JSON.stringify(grouped.body)).toContain("group_by")
      const p95 = yield* status({ metric: "p95_latency_ms", group_by: "principal_id" })
      expect(p95.status).toBe(400)
      const filtered = yield* status({
        group_by: "principal_id",
        filters: [{ dimension: "principal_id", values: ["p1", "p2"] }]
      })
      expect(filtered.status).toBe(200)
    })
  )
})
