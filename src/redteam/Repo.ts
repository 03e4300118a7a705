/** SQL of the red-team domain; every query is scoped to a workspace (the worker's claims excepted). */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { fairlyQueued, insertWithinCap } from "../platform/JobQueues.js"
import { cutAtBytes, cutPage, wasCut } from "../platform/PageBytes.js"
import { dieOnErrors } from "../platform/Sql.js"
import {
  AttackOfJobRow,
  FindingRow,
  JobRow,
  type NewAttack,
  PagedSessionRow,
  PlanRow,
  ShareLinkRow
} from "./RepoRows.js"

export type {
  AttackOfJobRow,
  AttackRow,
  FindingRow,
  JobRow,
  NewAttack,
  PlanRow,
  SessionRow,
  ShareLinkRow
} from "./RepoRows.js"

const InWorkspace = Schema.Struct({ workspaceId: Schema.String, id: Schema.String })

export class RedteamRepo extends Effect.Service<RedteamRepo>()("redteam/RedteamRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const json = (value: unknown) => JSON.stringify(value)
    const columns = sql`id, workspace_id, environment_id, agent_id, profile, target, agent_profile, status, error,
      attacks, landed, blocked, resume_count, created_at, updated_at`
    const shareLinkColumns = sql`workspace_id, job_id, compare_job_id, created_at, expires_at`
    const decodePlans = Schema.decodeUnknown(Schema.Array(PlanRow))
    const decodeJobs = Schema.decodeUnknown(Schema.Array(JobRow))
    const decodeShareLinks = Schema.decodeUnknown(Schema.Array(ShareLinkRow))
    const decodeRecorded = Schema.decodeUnknown(Schema.Array(Schema.Struct({ recorded: Schema.Number })))

    const listPlans = SqlSchema.findAll({
      Request: Schema.Struct({ workspaceId: Schema.String, agentId: Schema.String }),
      Result: PlanRow,
      execute: ({ agentId, workspaceId }) =>
        sql`select * from redteam_plans where workspace_id = ${workspaceId} and agent_id = ${agentId}
            order by created_at desc, id desc`
    })
    const findJob = SqlSchema.findOne({
      Request: InWorkspace,
      Result: JobRow,
      execute: ({ id, workspaceId }) =>
        sql`select ${columns} from redteam_jobs where workspace_id = ${workspaceId} and id = ${id}`
    })
    const cancelJob = SqlSchema.findOne({
      Request: InWorkspace,
      Result: JobRow,
      execute: ({ id, workspaceId }) =>
        sql`update redteam_jobs set status = 'canceled', finished_at = now(), updated_at = now(), worker_id = null
            where workspace_id = ${workspaceId} and id = ${id} and status in ('queued', 'running')
            returning ${columns}`
    })
    const jobHeld = SqlSchema.findOne({
      Request: Schema.Struct({ id: Schema.String, workerId: Schema.String }),
      Result: Schema.Struct({ held: Schema.Boolean }),
      execute: ({ id, workerId }) =>
        sql`select coalesce(status = 'running' and worker_id = ${workerId}, false) as held from redteam_jobs where id = ${id}`
    })
    const claimJobs = SqlSchema.findAll({
      Request: Schema.Struct({ workerId: Schema.String, limit: Schema.Number, perWorkspace: Schema.Number }),
      Result: JobRow,
      execute: ({ limit, perWorkspace, workerId }) =>
        sql`update redteam_jobs set status = 'running', worker_id = ${workerId}, heartbeat_at = now(),
              started_at = coalesce(started_at, now()), updated_at = now()
            where id in (${fairlyQueued(sql, "redteam_jobs", perWorkspace, limit)})
            returning ${columns}`
    })
    /** Back to the queue (resumed where it stopped), or `failed` once it was resumed `maxResumes` times. */
    const resumeOrGiveUp = (maxResumes: number, why: string) =>
      sql`status = case when resume_count >= ${maxResumes} then 'failed' else 'queued' end,
          error = case when resume_count >= ${maxResumes} then ${why} || ' ' || resume_count || ' times; giving up.'
                       else error end,
          finished_at = case when resume_count >= ${maxResumes} then now() else finished_at end,
          resume_count = resume_count + 1, worker_id = null, updated_at = now()`
    const recoverStale = SqlSchema.findAll({
      Request: Schema.Struct({ staleSeconds: Schema.Number, maxResumes: Schema.Number }),
      Result: Schema.Struct({ id: Schema.String, status: Schema.String }),
      execute: ({ maxResumes, staleSeconds }) =>
        sql`update redteam_jobs set ${resumeOrGiveUp(maxResumes, "The worker running this job stopped")}
            where status = 'running' and (heartbeat_at is null or heartbeat_at < now() - make_interval(secs => ${staleSeconds}))
            returning id, status`
    })
    const findingsOf = SqlSchema.findAll({
      Request: Schema.Struct({ workspaceId: Schema.String, jobId: Schema.String }),
      Result: FindingRow,
      execute: ({ jobId, workspaceId }) =>
        sql`select job_id, workspace_id, seq, case_id, attack, technique, category, goal, severity, kind, trial_index,
              session_id, prompt, outcome, landed, evidence, substrates, trace_id, error, created_at
            from redteam_attacks where workspace_id = ${workspaceId} and job_id = ${jobId} order by seq`
    })
    const decodePagedSessions = Schema.decodeUnknown(Schema.Array(PagedSessionRow))
    const doneSeqs = SqlSchema.findAll({
      Request: Schema.String,
      Result: Schema.Struct({ seq: Schema.Number }),
      execute: (jobId) => sql`select seq from redteam_attacks where job_id = ${jobId}`
    })
    const findShareLink = SqlSchema.findOne({
      Request: Schema.String,
      Result: ShareLinkRow,
      execute: (tokenHash) =>
        sql`select ${shareLinkColumns} from redteam_share_links
            where token_hash = ${tokenHash} and revoked_at is null and expires_at > now()`
    })
    const decodeAttacksOfJobs = Schema.decodeUnknown(Schema.Array(AttackOfJobRow))

    return dieOnErrors({
      // ---- plans
      insertPlan: (row: Omit<PlanRow, "created_at">) =>
        sql`insert into redteam_plans (id, workspace_id, agent_id, name, paths, unmapped_node_types, vectors)
          values (${row.id}, ${row.workspace_id}, ${row.agent_id}, ${row.name}, ${json(row.paths)}::jsonb,
                  ${json(row.unmapped_node_types)}::jsonb, ${json(row.vectors)}::jsonb)
          returning *`.pipe(
          Effect.flatMap(decodePlans),
          Effect.map((rows) => rows[0]!)
        ),
      listPlans: (workspaceId: string, agentId: string) => listPlans({ workspaceId, agentId }),
      deletePlan: (workspaceId: string, id: string) =>
        sql`delete from redteam_plans where workspace_id = ${workspaceId} and id = ${id} returning id`.pipe(
          Effect.map((rows) => rows.length === 1)
        ),

      // ---- jobs
      /** Queues a job unless its workspace already has `max` queued or running: none then. */
      insertJob: (
        max: number,
        row: {
          id: string
          workspace_id: string
          environment_id: string
          agent_id: string | null
          profile: string
          target: string
          agent_profile: unknown
        }
      ) =>
        insertWithinCap(
          sql,
          "redteam_jobs",
          row.workspace_id,
          max,
          sql`insert into redteam_jobs (id, workspace_id, environment_id, agent_id, profile, target, agent_profile, status)
            values (${row.id}, ${row.workspace_id}, ${row.environment_id}, ${row.agent_id}, ${row.profile}, ${row.target},
                    ${json(row.agent_profile)}::jsonb, 'queued')
            returning ${columns}`.pipe(
            Effect.flatMap(decodeJobs),
            Effect.map((rows) => rows[0]!)
          )
        ).pipe(Effect.map((result) => (result.inserted ? Option.some(result.value) : Option.none()))),
      findJob: (workspaceId: string, id: string) => findJob({ workspaceId, id }),
      listJobs: (
        workspaceId: string,
        filter: { agentId: string | undefined; after: Option.Option<{ at: string; id: string }>; limit: number }
      ) =>
        sql`select ${columns} from redteam_jobs where workspace_id = ${workspaceId}
          ${filter.agentId === undefined ? sql`` : sql`and agent_id = ${filter.agentId}`}
          ${Option.match(filter.after, {
            onNone: () => sql``,
            onSome: (after) => sql`and (created_at, id) < (${after.at}::timestamptz, ${after.id})`
          })}
          order by created_at desc, id desc limit ${filter.limit + 1}`.pipe(Effect.flatMap(decodeJobs)),
      /** Cancels a queued or running job; answers the job as it is now. */
      cancelJob: (workspaceId: string, id: string) => cancelJob({ workspaceId, id }),
      /**
       * Whether `workerId` still runs the job: false once it is canceled, gone, or recovered and handed to
       * another worker (this one's heartbeat was late), so two workers never attack with one job.
       */
      isHeldBy: (workerId: string, id: string) =>
        Effect.map(
          jobHeld({ id, workerId }),
          Option.exists((row) => row.held)
        ),

      // ---- the worker's side
      /**
       * Claims up to `limit` queued jobs for this worker, fairly across workspaces and at most `perWorkspace`
       * running per workspace (`fairlyQueued`); skips jobs other workers hold.
       */
      claimJobs: (workerId: string, limit: number, perWorkspace: number) =>
        claimJobs({ workerId, limit, perWorkspace }),
      heartbeat: (workerId: string, ids: ReadonlyArray<string>) =>
        ids.length === 0
          ? Effect.void
          : sql`update redteam_jobs set heartbeat_at = now() where worker_id = ${workerId} and status = 'running'
                and id in ${sql.in(ids)}`.pipe(Effect.asVoid),
      /**
       * Jobs left `running` by a worker that stopped heartbeating: back to `queued` (resumed where they
       * stopped), or `failed` after `maxResumes` attempts.
       */
      recoverStale: (staleSeconds: number, maxResumes: number) => recoverStale({ staleSeconds, maxResumes }),
      /** A worker shutting down hands its running jobs back to the queue. */
      release: (workerId: string, id: string) =>
        sql`update redteam_jobs set status = 'queued', worker_id = null, updated_at = now()
          where id = ${id} and worker_id = ${workerId} and status = 'running'`.pipe(Effect.asVoid),
      /** A job that stopped on a database failure: resumed later as after a crash, counted against `maxResumes`. */
      resumeLater: (workerId: string, id: string, maxResumes: number) =>
        sql`update redteam_jobs set ${resumeOrGiveUp(maxResumes, "The database failed under this job")}
          where id = ${id} and worker_id = ${workerId} and status = 'running'`.pipe(Effect.asVoid),
      finishJob: (workerId: string, id: string, status: "completed" | "failed", error: string | null) =>
        sql`update redteam_jobs set status = ${status}, error = ${error}, finished_at = now(), updated_at = now(),
            worker_id = null
          where id = ${id} and worker_id = ${workerId} and status = 'running'`.pipe(Effect.asVoid),
      doneSeqs: (jobId: string) => Effect.map(doneSeqs(jobId), (rows) => new Set(rows.map((row) => row.seq))),
      /**
       * Records one attack and bumps the job's counters, in one statement; a replayed seq changes nothing.
       * Answers whether it was recorded now (false: that seq was already).
       */
      insertAttack: (row: NewAttack) =>
        sql`with inserted as (
              insert into redteam_attacks (job_id, workspace_id, seq, case_id, attack, technique, category, goal, severity,
                kind, trial_index, session_id, prompt, reply, outcome, landed, evidence, substrates, trace_id, error, events)
              values (${row.job_id}, ${row.workspace_id}, ${row.seq}, ${row.case_id}, ${row.attack}, ${row.technique},
                ${row.category}, ${row.goal}, ${row.severity}, ${row.kind}, ${row.trial_index}, ${row.session_id},
                ${row.prompt}, ${row.reply}, ${row.outcome}, ${row.landed}, ${row.evidence}, ${json(row.substrates)}::jsonb,
                ${row.trace_id}, ${row.error},
                ${json(row.events)}::jsonb)
              on conflict (job_id, seq) do nothing returning outcome)
            update redteam_jobs set attacks = attacks + (select count(*) from inserted),
              landed = landed + (select count(*) from inserted where outcome = 'landed'),
              blocked = blocked + (select count(*) from inserted where outcome = 'blocked'),
              updated_at = now()
            where id = ${row.job_id}
            returning (select count(*) from inserted)::int as recorded`.pipe(
          Effect.flatMap(decodeRecorded),
          Effect.map((rows) => (rows[0]?.recorded ?? 0) > 0)
        ),

      // ---- attacks
      /** A job's attacks by seq, without their transcripts (a report of 300 attacks reads no reply). */
      findingsOf: (workspaceId: string, jobId: string) => findingsOf({ workspaceId, jobId }),
      /**
       * A job's sessions after `afterSeq`, cut after the one whose events reach `maxBytes` of JSON (at least
       * one); `more` when sessions follow. Summed in the database, so later transcripts are neither sent nor
       * decoded.
       */
      sessionsOf: (workspaceId: string, jobId: string, afterSeq: number, maxBytes: number) =>
        // Walked session by session (by primary key) while the sum stays under `maxBytes`: only the page's own
        // transcripts are measured, not every later one's on each page.
        sql`with recursive walk as (
              (select a.seq, octet_length(a.events::text)::bigint as total from redteam_attacks a
                where a.job_id = ${jobId} and a.workspace_id = ${workspaceId} and a.seq > ${afterSeq}
                order by a.seq limit 1)
              union all
              (select n.seq, w.total + octet_length(n.events::text) from walk w
                cross join lateral (select a.seq, a.events from redteam_attacks a
                  where a.job_id = ${jobId} and a.workspace_id = ${workspaceId} and a.seq > w.seq
                  order by a.seq limit 1) n
                where w.total < ${maxBytes}))
            select a.seq, a.case_id, a.attack, a.technique, a.goal, a.kind, a.trial_index, a.session_id, a.outcome,
              a.landed, a.trace_id, a.error, a.events,
              (select count(*) from walk)::int + (select count(*) from redteam_attacks m
                where m.job_id = ${jobId} and m.seq > (select max(seq) from walk))::int as fetched
            from walk w join redteam_attacks a on a.job_id = ${jobId} and a.seq = w.seq
            order by a.seq`.pipe(
          Effect.flatMap(decodePagedSessions),
          Effect.map((rows) => ({ rows, more: wasCut(rows) }))
        ),
      /**
       * Up to `limit` attack records past `after`, cut after the one whose prompt and reply reach `maxBytes`
       * (at least one); `more` when records follow. Sessions (events) are not read.
       */
      listAttacks: (
        workspaceId: string,
        filter: {
          attack: string | undefined
          outcome: string | undefined
          jobId: string | undefined
          after: Option.Option<{ jobId: string; seq: number }>
          limit: number
          maxBytes: number
        }
      ) =>
        cutAtBytes(
          sql,
          sql`select a.job_id, a.workspace_id, a.seq, a.case_id, a.attack, a.technique, a.category,
            a.goal, a.severity, a.kind, a.trial_index, a.session_id, a.prompt, a.reply, a.outcome, a.landed, a.evidence,
            a.trace_id, a.error, a.created_at, j.profile, j.target
          from redteam_attacks a join redteam_jobs j on j.id = a.job_id
          where a.workspace_id = ${workspaceId}
          ${filter.attack === undefined ? sql`` : sql`and a.attack = ${filter.attack}`}
          ${filter.outcome === undefined ? sql`` : sql`and a.outcome = ${filter.outcome}`}
          ${filter.jobId === undefined ? sql`` : sql`and a.job_id = ${filter.jobId}`}
          ${Option.match(filter.after, {
            onNone: () => sql``,
            onSome: (after) =>
              sql`and (a.job_id < ${after.jobId} or (a.job_id = ${after.jobId} and a.seq > ${after.seq}))`
          })}
          order by a.job_id desc, a.seq limit ${filter.limit + 1}`,
          sql`job_id desc, seq`,
          sql`octet_length(prompt) + coalesce(octet_length(reply), 0)`,
          filter.maxBytes
        ).pipe(
          Effect.flatMap(decodeAttacksOfJobs),
          Effect.map((rows) => cutPage(rows, filter.limit))
        ),

      // ---- share links
      insertShareLink: (row: {
        token_hash: string
        workspace_id: string
        job_id: string
        compare_job_id: string | null
        created_by: string
        expires_at: Date
      }) =>
        sql`insert into redteam_share_links (token_hash, workspace_id, job_id, compare_job_id, created_by, expires_at)
          values (${row.token_hash}, ${row.workspace_id}, ${row.job_id}, ${row.compare_job_id}, ${row.created_by}, ${row.expires_at})
          returning ${shareLinkColumns}`.pipe(
          Effect.flatMap(decodeShareLinks),
          Effect.map((rows) => rows[0]!)
        ),
      /** A live link: not revoked, not expired. */
      findShareLink: (tokenHash: string) => findShareLink(tokenHash),
      revokeShareLink: (workspaceId: string, tokenHash: string) =>
        sql`update redteam_share_links set revoked_at = now()
          where workspace_id = ${workspaceId} and token_hash = ${tokenHash} and revoked_at is null returning token_hash`.pipe(
          Effect.map((rows) => rows.length === 1)
        ),

      // ---- hardening results (the last run of each job)
      saveHardening: (workspaceId: string, jobId: string, result: unknown) =>
        sql`insert into redteam_hardening_results (workspace_id, job_id, result)
          values (${workspaceId}, ${jobId}, ${JSON.stringify(result)})
          on conflict (workspace_id, job_id) do update set result = excluded.result, created_at = now()`,
      findHardening: (workspaceId: string, jobId: string) =>
        sql<{ readonly result: unknown }>`select result from redteam_hardening_results
          where workspace_id = ${workspaceId} and job_id = ${jobId}`.pipe(
          Effect.map((rows) => Option.fromNullable(rows[0]?.result))
        )
    })
  })
}) {}
