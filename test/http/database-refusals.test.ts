/**
 * Values PostgreSQL refuses never answer 500: the schemas bound what they
 * can, and the one mapping of database failures (`databaseFaultOf`) turns
 * what a client can still provoke into a 4xx, and a database that cannot
 * serve for now (a broken connection, a statement past its timeout) into a
 * 503; a bug (a missing table) stays a 500. The mapping is checked on real
 * PostgreSQL errors.
 */
import { expect, layer } from "@effect/vitest"
import { randomBytes } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { SqlError } from "@effect/sql/SqlError"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Redacted } from "effect"
import { databaseFaultOf } from "../../src/platform/Sql.js"
import { baseUrl, SERVER_OPTIONS, TestDatabaseUrl, testServerWithDatabase } from "../support/TestServer.js"
import { call, expectValidation } from "../support/Raw.js"
import { createKey, tenant } from "../support/Tenants.js"

/** The failure of `statement` on the suite's database, as the service's SQL client reports it. */
const failureOf = (statement: (sql: SqlClient.SqlClient) => Effect.Effect<unknown, unknown>) =>
  Effect.gen(function* () {
    const url = yield* TestDatabaseUrl
    return yield* Effect.flip(
      Effect.flatMap(SqlClient.SqlClient, statement).pipe(
        Effect.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 }).pipe(Layer.orDie))
      )
    )
  })

layer(testServerWithDatabase("database"), SERVER_OPTIONS)("database refusals", (it) => {
  it.effect("an occurred_at outside PostgreSQL's range is 400 naming occurred_at, on both lanes; nothing stored", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const key = yield* createKey(owner)
      const run = yield* owner.api.runs.createRun({ payload: { agent_id: "bot", kind: "job" } })
      // Sent raw: the out-of-range value on the wire is the point, through both lanes' own parsing.
      for (const occurred_at of ["-100000-01-01T00:00:00Z", "+275000-01-01T00:00:00Z"]) {
        for (const token of [owner.jwt, key.plaintext_key]) {
          const answer = yield* call(base, "POST", `/v1/runs/${run.id}/events`, {
            token,
            body: { kind: "custom", occurred_at }
          })
          expectValidation(answer, "occurred_at")
        }
      }
      // A good event after them is stored alone, first in its run.
      const stored = yield* owner.api.runs.appendRunEvent({ path: { id: run.id }, payload: { kind: "custom" } })
      expect(stored.sequence).toBe(1)
    })
  )

  it.effect("PostgreSQL refusals: 400/409; a dropped connection, a statement timed out: 503; a bug: 500", () =>
    Effect.gen(function* () {
      const setup = yield* failureOf((sql) =>
        sql`create table bounds_probe (name text primary key)`.pipe(
          Effect.zipRight(sql`insert into bounds_probe values ('taken')`),
          Effect.zipRight(Effect.fail("set up"))
        )
      )
      expect(setup).toBe("set up")

      // Random text does not compress below the index row limit (program_limit_exceeded, 54000).
      const tooLarge = yield* failureOf(
        (sql) => sql`insert into bounds_probe values (${randomBytes(16_000).toString("hex")})`
      )
      expect(databaseFaultOf(tooLarge)).toMatchObject({ _tag: "BadRequest", code: "validation_failed" })

      const nul = yield* failureOf((sql) => sql`select ${"a\u0000b"}::text`)
      expect(databaseFaultOf(nul)).toMatchObject({ _tag: "BadRequest", code: "validation_failed" })

      const outOfRange = yield* failureOf((sql) => sql`select ${"2147483648"}::int4`)
      expect(databaseFaultOf(outOfRange)).toMatchObject({ _tag: "BadRequest", code: "validation_failed" })

      const duplicate = yield* failureOf((sql) => sql`insert into bounds_probe values ('taken')`)
      expect(databaseFaultOf(duplicate)).toMatchObject({ _tag: "Conflict", code: "conflict" })

      const unavailable = { _tag: "ServiceUnavailable", code: "database_unavailable", retry_after_seconds: 1 }
      const dropped = yield* failureOf((sql) => sql`select pg_terminate_backend(pg_backend_pid())`)
      expect(databaseFaultOf(dropped)).toMatchObject(unavailable)
      const timedOut = yield* failureOf((sql) =>
        sql.withTransaction(sql`set local statement_timeout = 50`.pipe(Effect.zipRight(sql`select pg_sleep(5)`)))
      )
      expect(databaseFaultOf(timedOut)).toMatchObject(unavailable)
      // A failure with no SQLSTATE that is not the connection's (a value the driver cannot send) is a bug: a 500.
      const circular: { self?: unknown } = {}
      circular.self = circular
      const unsendable = yield* failureOf((sql) => sql.unsafe("select $1::jsonb", [circular]))
      expect(unsendable).toBeInstanceOf(SqlError)
      expect(databaseFaultOf(unsendable)).toBeUndefined()
      const missingTable = yield* failureOf((sql) => sql`select * from no_such_table`)
      expect(databaseFaultOf(missingTable)).toBeUndefined()
    })
  )
})
