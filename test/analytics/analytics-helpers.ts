/** Helpers of the analytics suites: metric queries and reads of the analytics endpoints. */
import { Effect } from "effect"
import { call, expectStatus } from "../identity/http-helpers.js"

export interface QueryResultBody {
  readonly metric: string
  readonly group_by: string | null
  readonly points: ReadonlyArray<{ label: string; value: number }>
  readonly total: number
}

export const queryRaw = (base: string, owner: { jwt: string }, body: Record<string, unknown>) =>
  call(base, "POST", "/v1/analytics/query", { token: owner.jwt, body })

export const query = (base: string, owner: { jwt: string }, body: Record<string, unknown>) =>
  Effect.map(queryRaw(base, owner, body), (response) => expectStatus(response, 200) as QueryResultBody)

export const total = (base: string, owner: { jwt: string }, metric: string, extra: Record<string, unknown> = {}) =>
  Effect.map(query(base, owner, { metric, ...extra }), (result) => result.total)

/** Points of a grouped query as {label: value}. */
export const byLabel = (result: QueryResultBody) =>
  Object.fromEntries(result.points.map((point) => [point.label, point.value]))
