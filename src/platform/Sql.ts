/** Helpers for repositories. */
import { SqlClient } from "@effect/sql"
import { SqlError } from "@effect/sql/SqlError"
import { Effect, Option } from "effect"

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

/** The row a lookup found, or `error()` when it found none. */
export const orFailWith =
  <E2>(error: () => E2) =>
  <A, E, R>(lookup: Effect.Effect<Option.Option<A>, E, R>) =>
    Effect.flatMap(lookup, Option.match({ onNone: () => Effect.fail(error()), onSome: Effect.succeed }))
