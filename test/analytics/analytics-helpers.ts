/** Helpers of the analytics suites: metric queries through the typed client, and the raw query for bodies the contract refuses. */
import { Effect } from "effect"
import type { AnalyticsQuery, QueryResult } from "../../src/analytics/Domain.js"
import { type Caller, clientAt } from "../support/Api.js"
import { call } from "../support/Raw.js"

export type QueryResultBody = typeof QueryResult.Type

export type Query = typeof AnalyticsQuery.Type

export const query = (owner: Caller, body: Query) => owner.api.analytics.queryAnalytics({ payload: body })

/** `POST /v1/analytics/query` sent raw: for bodies the contract's schema refuses. */
export const queryRaw = (base: string, owner: { readonly jwt: string }, body: Record<string, unknown>) =>
  call(base, "POST", "/v1/analytics/query", { token: owner.jwt, body })

/** The total of `metric` for the workspace of `owner`'s session (any suite's tenant: only its jwt is read). */
export const total = (
  base: string,
  owner: { readonly jwt: string },
  metric: string,
  extra: Omit<Query, "metric"> = {}
) =>
  Effect.flatMap(clientAt(base, { token: owner.jwt }), (api) =>
    Effect.map(query({ api }, { metric, ...extra }), (result) => result.total)
  )

/** Points of a grouped query as {label: value}. */
export const byLabel = (result: QueryResultBody) =>
  Object.fromEntries(result.points.map((point) => [point.label, point.value]))

/** `count` trace_count queries sent at once with `token`, on a fiber of their own (joined for their answers). */
export const forkedQueries = (base: string, token: string, count: number) =>
  Effect.fork(
    Effect.all(
      Array.from({ length: count }, () =>
        call(base, "POST", "/v1/analytics/query", { token, body: { metric: "trace_count" } })
      ),
      { concurrency: "unbounded" }
    )
  )
