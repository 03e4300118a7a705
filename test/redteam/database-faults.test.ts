/**
 * A database failure under a running red-team job (here a statement past
 * DATABASE_STATEMENT_TIMEOUT_MS, waiting behind another session's lock) does
 * not fail the job: it goes back to the queue, counted as a resumption, and
 * completes once the database serves again. Before, one such error marked
 * the job `failed` "on an internal error".
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { eventually } from "../support/Eventually.js"
import { lockedTable, queryDatabase } from "../support/Database.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, TestDatabaseUrl, testServerWithDatabase } from "../support/TestServer.js"
import { DEMO, dispatch, waitForJob } from "./redteam-helpers.js"

const server = testServerWithDatabase("database", { DATABASE_STATEMENT_TIMEOUT_MS: "1500" })

layer(server, SERVER_OPTIONS)("red-team jobs and database failures", (it) => {
  it.effect("a job whose attacks cannot be read in time is resumed later, not failed", () =>
    Effect.gen(function* () {
      const databaseUrl = yield* TestDatabaseUrl
      const owner = yield* tenant(yield* baseUrl)
      const state = (id: string) =>
        Effect.map(
          queryDatabase<{ status: string; resume_count: number; error: string | null }>(
            databaseUrl,
            `select status, resume_count, error from redteam_jobs where id = $1`,
            [id]
          ),
          (rows) => rows[0]!
        )
      const job = yield* Effect.scoped(
        Effect.gen(function* () {
          // The attack records are locked: the runner's read of what the job has done runs past the timeout.
          yield* lockedTable(databaseUrl, "redteam_attacks")
          const queued = yield* dispatch(owner, { profile: "quick", target_url: DEMO })
          const paused = yield* eventually(
            Effect.flatMap(state(queued.id), (row) =>
              row.resume_count > 0 || row.status === "failed" ? Effect.succeed(row) : Effect.fail(row.status)
            )
          )
          expect(paused.status).not.toBe("failed")
          expect(paused.error).toBeNull()
          return queued
        })
      )
      // The database serves again: the job is resumed and completes.
      const done = yield* waitForJob(owner, job.id)
      expect(done.job.attacks).toBe(20)
      expect(done.job.error).toBeNull()
    })
  )
})
