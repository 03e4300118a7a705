/**
 * Jobs survive a worker that stopped: a job left `running` with a stale
 * heartbeat (its worker died mid-job) is resumed where it stopped and
 * completes; one that already exhausted its resumptions is marked failed.
 * Never stuck running. A worker whose job was recovered and handed to another
 * worker (its heartbeat was late) stops attacking with it. Also the job
 * list's cap with more than 100 jobs.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { queryDatabase } from "../support/Database.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, TestDatabaseUrl, testServerWithDatabase } from "../support/TestServer.js"
import { eventually } from "../support/Eventually.js"
import { agentYaml, createAgent, DEMO, dispatch, listedJob, stubTarget, waitForJob } from "./redteam-helpers.js"

layer(testServerWithDatabase("database", { HTTP_URL_ALLOWLIST: "127.0.0.1" }), SERVER_OPTIONS)(
  "red-team jobs across worker restarts",
  (it) => {
    it.effect("a job whose worker died is resumed where it stopped; one past its resumptions fails", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const databaseUrl = yield* TestDatabaseUrl
        const owner = yield* tenant(base)
        const template = yield* dispatch(owner, { profile: "quick", target_url: DEMO })
        const done = yield* waitForJob(owner, template.id)
        expect(done.job.attacks).toBe(20)

        // Simulate a worker that died mid-job: a copy of the job, running, with 5 of its attacks recorded and an old heartbeat.
        const copy = (id: string, resumes: number) =>
          queryDatabase(
            databaseUrl,
            `insert into redteam_jobs (id, workspace_id, environment_id, agent_id, profile, target, agent_profile, status,
             attacks, landed, blocked, worker_id, heartbeat_at, resume_count, started_at)
           select $1, workspace_id, environment_id, agent_id, profile, target, agent_profile, 'running', 0, 0, 0,
             'dead-worker', now() - interval '1 minute', $2, now() - interval '1 minute'
           from redteam_jobs where id = $3`,
            [id, resumes, template.id]
          )
        yield* copy("rtj_crashed", 0)
        yield* queryDatabase(
          databaseUrl,
          `insert into redteam_attacks (job_id, workspace_id, seq, case_id, attack, technique, category, goal, severity, kind,
           trial_index, session_id, prompt, reply, outcome, landed, evidence, substrates, trace_id, error, events)
         select 'rtj_crashed', workspace_id, seq, case_id, attack, technique, category, goal, severity, kind, trial_index,
           session_id || '-before-crash', prompt, reply, outcome, landed, evidence, substrates, trace_id, error, events
         from redteam_attacks where job_id = $1 and seq <= 5`,
          [template.id]
        )
        yield* queryDatabase(databaseUrl, `update redteam_jobs set attacks = 5 where id = 'rtj_crashed'`)
        yield* copy("rtj_hopeless", 3)

        const resumed = yield* waitForJob(owner, "rtj_crashed", "completed", "60 seconds")
        expect(resumed.job.attacks).toBe(20)
        expect(resumed.sessions.map((s) => s.seq)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1))
        // The five recorded before the crash were kept, not run again.
        expect(resumed.sessions.filter((s) => String(s.session_id).endsWith("-before-crash"))).toHaveLength(5)
        const [row] = yield* queryDatabase<{ resume_count: number }>(
          databaseUrl,
          `select resume_count from redteam_jobs where id = 'rtj_crashed'`
        )
        expect(row!.resume_count).toBe(1)

        const failed = yield* waitForJob(owner, "rtj_hopeless", "failed", "60 seconds")
        expect(failed.job.error).toMatch(/stopped/)
      })
    )

    it.effect("a worker stops a job recovered and handed to another worker: no two workers attack with one job", () =>
      Effect.scoped(
        Effect.gen(function* () {
          const owner = yield* tenant(yield* baseUrl)
          const databaseUrl = yield* TestDatabaseUrl
          // The target never answers: the job's attacks stay in flight until its runner aborts them.
          const slow = yield* stubTarget(() => ({ status: 200, body: null, hold: true }))
          yield* createAgent(owner, agentYaml("held-bot", `${slow.url}/chat`))
          const job = yield* dispatch(owner, { profile: "quick", target_url: `${slow.url}/chat`, agent_id: "held-bot" })
          yield* eventually(Effect.suspend(() => (slow.open() > 0 ? Effect.void : Effect.fail("no attack in flight"))))
          // What recovery and another worker's claim leave behind: the job running, held by someone else.
          yield* queryDatabase(databaseUrl, `update redteam_jobs set worker_id = 'another-worker' where id = $1`, [
            job.id
          ])
          // This worker aborts its attacks (well before the target's 15 s timeout would have recorded them as errors).
          yield* eventually(
            Effect.suspend(() => (slow.open() === 0 ? Effect.void : Effect.fail(`${slow.open()} in flight`)))
          )
          const after = (yield* listedJob(owner, job.id))!
          expect(after.status).toBe("running")
          expect(after.attacks).toBe(0)
        })
      )
    )

    it.effect("GET /v1/redteam/jobs clamps a limit above 100 to 100", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const databaseUrl = yield* TestDatabaseUrl
        const owner = yield* tenant(base)
        const job = yield* dispatch(owner, { profile: "quick", target_url: DEMO })
        yield* waitForJob(owner, job.id)
        yield* queryDatabase(
          databaseUrl,
          `insert into redteam_jobs (id, workspace_id, environment_id, agent_id, profile, target, agent_profile, status, created_at)
         select 'rtj_bulk_' || n, workspace_id, environment_id, agent_id, profile, target, agent_profile, 'completed',
           created_at - n * interval '1 second'
         from redteam_jobs, generate_series(1, 110) as n where id = $1`,
          [job.id]
        )
        const page = yield* owner.api.redteam.listJobs({ urlParams: { limit: 101 } })
        expect(page.jobs).toHaveLength(100)
        expect(page.jobs[0]!.id).toBe(job.id)
        expect(page.next_cursor).toBeDefined()
        const rest = yield* owner.api.redteam.listJobs({
          urlParams: { limit: 100, ...(page.next_cursor === undefined ? {} : { cursor: page.next_cursor }) }
        })
        expect(rest.jobs).toHaveLength(11)
        expect(rest.next_cursor).toBeUndefined()
      })
    )
  }
)
