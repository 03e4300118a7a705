/**
 * `GET /v1/redteam/jobs/{id}` pages its sessions by transcript size: a page
 * ends early, with `next_cursor`, after the session whose events bring it to
 * MAX_PAGE_BYTES of JSON. Every turn's reply may be 256 KiB, so the
 * sessions of a deep job made one answer of hundreds of MiB. Attack records
 * are paged by their prompts and replies the same way; reports read no
 * transcript at all.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { JobId } from "../../src/redteam/Domain.js"
import { MAX_PAGE_BYTES } from "../../src/platform/PageBytes.js"
import { encodeCursor } from "../../src/platform/Cursor.js"
import { expectFailure } from "../support/Api.js"
import { queryDatabase } from "../support/Database.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, TestDatabaseUrl, testServerWithDatabase } from "../support/TestServer.js"
import { DEMO, dispatch, report, waitForJob } from "./redteam-helpers.js"

const MIB = 1024 * 1024

layer(testServerWithDatabase("database"), SERVER_OPTIONS)("pages of a job's sessions", (it) => {
  it.effect("sessions with large transcripts come in pages of about 4 MiB; every one once, in seq order", () =>
    Effect.gen(function* () {
      const databaseUrl = yield* TestDatabaseUrl
      const owner = yield* tenant(yield* baseUrl)
      const template = yield* dispatch(owner, { profile: "quick", target_url: DEMO })
      yield* waitForJob(owner, template.id)
      // A copy of the job whose 20 sessions each carry a reply of 1 MiB.
      yield* queryDatabase(
        databaseUrl,
        `insert into redteam_jobs (id, workspace_id, environment_id, agent_id, profile, target, agent_profile, status,
           attacks, landed, blocked)
         select 'rtj_big_replies', workspace_id, environment_id, agent_id, profile, target, agent_profile, status,
           attacks, landed, blocked
         from redteam_jobs where id = $1`,
        [template.id]
      )
      yield* queryDatabase(
        databaseUrl,
        `insert into redteam_attacks (job_id, workspace_id, seq, case_id, attack, technique, category, goal, severity, kind,
           trial_index, session_id, prompt, reply, outcome, landed, evidence, substrates, trace_id, error, events)
         select 'rtj_big_replies', workspace_id, seq, case_id, attack, technique, category, goal, severity, kind,
           trial_index, session_id, prompt, repeat('r', $2), outcome, landed, evidence, substrates, trace_id, error,
           jsonb_set(events, '{0,content_text}', to_jsonb(repeat('x', $2)))
         from redteam_attacks where job_id = $1`,
        [template.id, MIB]
      )
      const id = JobId.make("rtj_big_replies")
      const seqs: Array<number> = []
      let cursor: string | undefined
      let pages = 0
      do {
        const page = yield* owner.api.redteam.getJob({
          path: { id },
          urlParams: cursor === undefined ? {} : { cursor }
        })
        pages += 1
        expect(page.sessions.length).toBeGreaterThan(0)
        // The page stops after the session that reaches the budget: at most one session past it.
        expect(page.sessions.length).toBeLessThanOrEqual(MAX_PAGE_BYTES / MIB + 1)
        seqs.push(...page.sessions.map((session) => session.seq))
        cursor = page.next_cursor
      } while (cursor !== undefined)
      expect(seqs).toEqual(Array.from({ length: 20 }, (_, i) => i + 1))
      expect(pages).toBeGreaterThanOrEqual(4)

      // Attack records (prompt and reply, 1 MiB each here) are paged by the same budget, whatever the limit.
      const recordSeqs: Array<number> = []
      let recordCursor: string | undefined
      do {
        const page = yield* owner.api.redteam.listAttacks({
          urlParams: { job_id: id, limit: 100, ...(recordCursor === undefined ? {} : { cursor: recordCursor }) }
        })
        expect(page.records.length).toBeGreaterThan(0)
        expect(page.records.length).toBeLessThanOrEqual(MAX_PAGE_BYTES / MIB + 1)
        recordSeqs.push(...page.records.map((record) => record.seq))
        recordCursor = page.next_cursor
      } while (recordCursor !== undefined)
      expect(recordSeqs).toEqual(Array.from({ length: 20 }, (_, i) => i + 1))

      // The report counts every attack without reading a transcript.
      const shown = yield* report(owner, id)
      expect(shown.aggregates.total).toBe(20)

      // A cursor that is not one of ours is 400, never 500.
      for (const forged of [
        "not-a-cursor",
        encodeCursor(["0"]),
        encodeCursor(["99999999999"]),
        encodeCursor(["1", "2"])
      ]) {
        yield* expectFailure(owner.api.redteam.getJob({ path: { id }, urlParams: { cursor: forged } }), 400)
      }
    })
  )
})
