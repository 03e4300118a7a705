/**
 * Per-workspace caps on what a workspace stores: budget alert configs (each
 * one is matched against every metered event of its meter, and fires and
 * delivers on its own), and what unpaged lists answer whole: LLM prices
 * (`GET /v1/llm-pricing`), provider connections, gateway routes,
 * environments (each hot-path read of a workspace's runtime config holds all
 * of them), saved analytics views (`GET /v1/analytics/views`) and agent
 * profiles, tools' metadata and label policies (every decision's snapshot
 * holds all of a workspace's).
 */
import type { SqlClient, Statement } from "@effect/sql"
import type { SqlError } from "@effect/sql/SqlError"
import { Effect, Option, type ParseResult, Schema } from "effect"
import { Conflict } from "../http/Errors.js"
import { lockKey } from "./Sql.js"

const decodeCount = Schema.decodeUnknown(Schema.Array(Schema.Struct({ stored: Schema.Number })))

/**
 * The rule every per-workspace cap shares: runs `write` in a transaction unless `count` (a query answering
 * `stored`) is at `max` and `replaces` (the write changes a row rather than adding one) is false: none then.
 * A transaction lock on `lock` makes concurrent writes take turns, so two cannot both pass at `max - 1`.
 */
export const writeWithinCount = <A, E, R>(
  sql: SqlClient.SqlClient,
  lock: string,
  count: Statement.Statement<unknown>,
  max: number,
  replaces: Effect.Effect<boolean, SqlError | ParseResult.ParseError>,
  write: Effect.Effect<A, E, R>
) =>
  sql.withTransaction(
    Effect.gen(function* () {
      yield* lockKey(sql, lock)
      const [row] = yield* Effect.flatMap(count, decodeCount)
      if ((row?.stored ?? 0) >= max && !(yield* replaces)) return Option.none<A>()
      return Option.some(yield* write)
    })
  )

/** `writeWithinCount` over the workspace's rows of `table`. */
export const storeWithinCap = <A, E, R>(
  sql: SqlClient.SqlClient,
  table:
    | "budget_alert_configs"
    | "llm_prices"
    | "provider_connections"
    | "gateway_routes"
    | "environments"
    | "analytics_views"
    | "agents"
    | "tool_metadata"
    | "label_policies",
  workspaceId: string,
  max: number,
  replaces: Effect.Effect<boolean, SqlError | ParseResult.ParseError>,
  write: Effect.Effect<A, E, R>
) =>
  writeWithinCount(
    sql,
    `${table}:${workspaceId}`,
    sql`select count(*)::int as stored from ${sql(table)} where workspace_id = ${workspaceId}`,
    max,
    replaces,
    write
  )

/** The 409 of a write past a cap: `what` the workspace stores, `setting` the cap's name, `remedy` what frees room. */
export const capReached = (
  code: string,
  max: number,
  what: string,
  setting: string,
  remedy = "delete some it no longer needs"
) =>
  new Conflict({
    code,
    message: `This workspace may store at most ${max} ${what} (${setting}); ${remedy}, or ask the operator to raise the limit.`
  })

/** A cap as its 409 names it. */
export interface Cap {
  readonly max: number
  readonly code: string
  readonly what: string
  readonly setting: string
}

/** `storeWithinCap` that fails with the cap's 409 when the workspace is at it (database failures are defects). */
export const storeWithinCapOrRefuse = <A, R>(
  sql: SqlClient.SqlClient,
  table: Parameters<typeof storeWithinCap>[1],
  workspaceId: string,
  cap: Cap,
  replaces: Effect.Effect<boolean, SqlError | ParseResult.ParseError>,
  write: Effect.Effect<A, never, R>
) =>
  storeWithinCap(sql, table, workspaceId, cap.max, replaces, write).pipe(
    Effect.orDie,
    Effect.flatMap(
      Option.match({
        onNone: () => Effect.fail(capReached(cap.code, cap.max, cap.what, cap.setting)),
        onSome: (stored) => Effect.succeed(stored)
      })
    )
  )
