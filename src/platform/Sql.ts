/** Helpers for repositories. */
import { SqlClient, type Statement } from "@effect/sql"
import { SqlError } from "@effect/sql/SqlError"
import { Effect, Option, type ParseResult, Predicate } from "effect"
import { BadRequest, Conflict, ServiceUnavailable } from "../http/Errors.js"

type OrDie<T> = {
  readonly [K in keyof T]: T[K] extends (...args: infer Args) => Effect.Effect<infer A, infer _E, infer R>
    ? (...args: Args) => Effect.Effect<A, never, R>
    : T[K]
}

/**
 * Turns every repository method's failure into a defect: a database that
 * fails is not the client's fault, and the HTTP pipeline answers it as a
 * logged 500 with the request id. Expected outcomes (a taken name, a missing
 * row) are results, not errors, so they must not be expressed as failures.
 */
export const dieOnErrors = <T extends Record<string, unknown>>(methods: T): OrDie<T> =>
  Object.fromEntries(
    Object.entries(methods).map(([name, method]) => [
      name,
      typeof method === "function"
        ? (...args: ReadonlyArray<unknown>) =>
            Effect.orDie((method as (...a: ReadonlyArray<unknown>) => Effect.Effect<unknown, unknown>)(...args))
        : method
    ])
  ) as OrDie<T>

/** A transaction runner over `sql`; a failure of the transaction itself is a defect (see `dieOnErrors`). */
export const transactionOf =
  (sql: SqlClient.SqlClient) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    sql.withTransaction(effect).pipe(Effect.catchIf(isSqlError, (error) => Effect.die(error)))

const isSqlError = (error: unknown): error is SqlError => error instanceof SqlError

/** Serializes transactions that take the same key: held until the caller's transaction ends. */
export const lockKey = (sql: SqlClient.SqlClient, key: string) =>
  sql`select pg_advisory_xact_lock(hashtextextended(${key}, 0))`

/** The row a lookup found, or `error()` when it found none. */
export const orFailWith =
  <E2>(error: () => E2) =>
  <A, E, R>(lookup: Effect.Effect<Option.Option<A>, E, R>) =>
    Effect.flatMap(lookup, Option.match({ onNone: () => Effect.fail(error()), onSome: Effect.succeed }))

/** `error` and the errors along its `cause` chain, at most five. */
const causeChain = (error: unknown): ReadonlyArray<object> => {
  const chain: Array<object> = []
  for (let link = error; Predicate.isObject(link) && chain.length < 5 && !chain.includes(link);) {
    chain.push(link)
    link = Predicate.hasProperty(link, "cause") ? link.cause : undefined
  }
  return chain
}

const codeOf = (error: object) => (Predicate.hasProperty(error, "code") ? error.code : undefined)

/** The SQLSTATE of a database failure (PostgreSQL's five-character code), looked for along its `cause` chain. */
const sqlStateOf = (error: unknown): string | undefined =>
  causeChain(error)
    .map((link, depth) => (link instanceof SqlError || depth > 0 ? codeOf(link) : undefined))
    .find((code): code is string => typeof code === "string" && /^[0-9A-Z]{5}$/.test(code))

/**
 * SQLSTATE classes of a database that cannot serve now but may shortly: a
 * lost connection (08), a transaction rolled back for a deadlock or a
 * serialization conflict (40), no resources left (53: too many connections,
 * disk full), an operator's or a timeout's intervention (57: a statement that
 * ran past `statement_timeout`, a shutdown), a lock not available (55P03).
 */
const transientState = /^(08|40|53|57)|^55P03$/

/**
 * True when the connection or the pool failed, along the `cause` chain: a system error (ECONNREFUSED,
 * ECONNRESET, EPIPE...) or pg's and sql-pg's own words for a cut connection or a pool wait past its
 * timeout ("Connection terminated unexpectedly", "timeout exceeded when trying to connect", "Failed to
 * acquire connection").
 */
const isConnectionFailure = (error: unknown): boolean =>
  causeChain(error).some((link) => {
    const code = codeOf(link)
    const message = Predicate.hasProperty(link, "message") ? link.message : undefined
    return (
      (typeof code === "string" && /^E[A-Z]{3,}$/.test(code)) ||
      (typeof message === "string" && /connection|timeout exceeded when trying to connect/i.test(message))
    )
  })

const databaseUnavailable = () =>
  new ServiceUnavailable({
    code: "database_unavailable",
    message: "The database cannot serve this request right now; retry shortly.",
    retry_after_seconds: 1
  })

/**
 * True when `error` is the database out of reach or refusing for now (a refused connect, a cut socket, a pool
 * wait past its timeout, or a `transientState`): the same work may succeed once it is back.
 */
export const isDatabaseUnavailable = (error: unknown): boolean => {
  if (!(error instanceof SqlError)) return false
  const state = sqlStateOf(error)
  return state === undefined ? isConnectionFailure(error) : transientState.test(state)
}

/**
 * The one mapping of database failures that are not a bug of ours to an HTTP
 * error. Values a client's input can still provoke (past the request
 * schemas' bounds) are 4xx: values PostgreSQL cannot store (class 22, e.g. a
 * NUL character in text), values too large for an index row or statements
 * too large (class 54), a broken constraint (class 23: 409 for a duplicate
 * or a dangling reference, else 400). A database out of reach or refusing
 * for now (a refused connect, a cut socket, a pool wait past its timeout, or
 * a `transientState`) is 503 `database_unavailable` with `Retry-After`.
 * Anything else (a bug) answers undefined and stays a logged 500. The HTTP
 * pipeline and the fast lane both ask here.
 */
export const databaseFaultOf = (defect: unknown): BadRequest | Conflict | ServiceUnavailable | undefined => {
  if (!(defect instanceof SqlError)) return undefined
  if (isDatabaseUnavailable(defect)) return databaseUnavailable()
  const state = sqlStateOf(defect)
  if (state === undefined) return undefined
  if (state === "23505") {
    return new Conflict({ code: "conflict", message: "Something with the same identifying values already exists." })
  }
  if (state === "23503") {
    return new Conflict({
      code: "conflict",
      message: "The request refers to something that does not exist or is still in use."
    })
  }
  if (state.startsWith("22") || state.startsWith("23")) {
    return new BadRequest({
      code: "validation_failed",
      message: "A value in the request cannot be stored (invalid, out of range or not allowed)."
    })
  }
  if (state.startsWith("54")) {
    return new BadRequest({
      code: "validation_failed",
      message: "A value in the request is too large to store or query; see docs/limits.md."
    })
  }
  return undefined
}

/**
 * The most JSON (bytes of text) one page of a list of large rows carries (run events' metadata, traces'
 * payloads): past it the page ends early, with its next cursor. Each row may carry up to a request body, so a
 * page of 100 or 200 of them made one answer of hundreds of MiB, read, decoded and encoded while every other
 * request waited.
 */
export const MAX_PAGE_BYTES = 4 * 1024 * 1024

/**
 * The rows of `rows` (a query that orders by `order` and fetches a page and one more) up to and including the
 * one whose JSON `column` brings the page to `maxBytes`, at least one; each carries `fetched`: how many `rows`
 * had (see `bytePage`). The sizes are summed in the database, so rows past the budget are neither sent nor decoded.
 */
export const cutAtBytes = (
  sql: SqlClient.SqlClient,
  rows: Statement.Fragment,
  order: Statement.Fragment,
  column: string,
  maxBytes: number
) =>
  sql`with candidates as (${rows}),
        sized as (
          select c.*, (count(*) over ())::int as fetched,
                 coalesce(sum(octet_length(c.${sql(column)}::text))
                   over (${order} rows between unbounded preceding and 1 preceding), 0) as bytes_before
          from candidates c)
      select * from sized where bytes_before < ${maxBytes} ${order}`

/** The first `limit` rows of a `cutAtBytes` answer, and whether more rows follow them. */
export const bytePage = <Row extends { readonly fetched: number }>(rows: ReadonlyArray<Row>, limit: number) => {
  const page = rows.slice(0, limit)
  return { rows: page, more: (rows[0]?.fetched ?? 0) > page.length }
}

/** One side of a window around an item: a query of its rows, nearest the item first, and that order. */
export interface WindowSide {
  readonly rows: Statement.Fragment
  readonly order: Statement.Fragment
}

/**
 * The rows of a window around one item, in list order, each side cut (`cutAtBytes`) once its JSON `column`
 * reaches half of `maxBytes`: `before` (the rows ahead of the item in the list) and `from` (the item and the
 * rows after it). `more`: rows after the item were left out for their bytes.
 */
export const windowByBytes = <Row extends { readonly fetched: number }>(
  sql: SqlClient.SqlClient,
  sides: { readonly before: WindowSide; readonly from: WindowSide },
  column: string,
  maxBytes: number,
  decode: (rows: unknown) => Effect.Effect<ReadonlyArray<Row>, ParseResult.ParseError>
) => {
  const side = ({ order, rows }: WindowSide) =>
    Effect.flatMap(cutAtBytes(sql, rows, order, column, Math.floor(maxBytes / 2)), decode)
  return Effect.map(Effect.all([side(sides.before), side(sides.from)]), ([before, from]) => ({
    rows: [...before].reverse().concat(from),
    more: (from[0]?.fetched ?? 0) > from.length
  }))
}
