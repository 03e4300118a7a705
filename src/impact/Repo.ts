/**
 * SQL of impact replay: its job queue (`impact_jobs`, claimed fairly across
 * workspaces with `for update skip locked` like the red-team queue,
 * platform/JobQueues.ts) and what a replay reads:
 * retained decisions (traces) in order, and landed red-team attacks. Every
 * query reading a workspace's data takes its id.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { fairlyQueued, insertWithinCap } from "../platform/JobQueues.js"
import { instantOf } from "../platform/Schemas.js"
import { dieOnErrors } from "../platform/Sql.js"
import { StoredRequest } from "./Domain.js"

export const ImpactJobRow = Schema.Struct({
  id: Schema.String,
  workspace_id: Schema.String,
  request: StoredRequest,
  document_digests: Schema.Array(Schema.String),
  status: Schema.Literal("queued", "running", "completed", "failed"),
  total: Schema.Number,
  replayed: Schema.Number,
  result: Schema.Unknown,
  result_digest: Schema.NullOr(Schema.String),
  error: Schema.NullOr(Schema.String),
  created_at: Schema.DateFromSelf,
  started_at: Schema.NullOr(Schema.DateFromSelf),
  finished_at: Schema.NullOr(Schema.DateFromSelf)
})
export type ImpactJobRow = typeof ImpactJobRow.Type

const RetainedRow = Schema.Struct({
  id: Schema.String,
  agent_id: Schema.String,
  environment_id: Schema.String,
  decision: Schema.String,
  latest_review_outcome: Schema.NullOr(Schema.String),
  granted: Schema.Boolean,
  request: Schema.Unknown,
  created_at: Schema.DateFromSelf
})
export type RetainedRow = typeof RetainedRow.Type

const Window = {
  workspaceId: Schema.String,
  start: Schema.String,
  end: Schema.String,
  agentId: Schema.NullOr(Schema.String)
}
/** The decisions a job replays: made in [start, end), of one agent or all. */
export type ReplayWindow = Schema.Struct.Type<typeof Window>

const NewJob = Schema.Struct({
  id: Schema.String,
  workspaceId: Schema.String,
  request: StoredRequest,
  digests: Schema.Array(Schema.String),
  createdBy: Schema.String
})

const columns = `id, workspace_id, request, document_digests, status, total, replayed, result, result_digest, error,
  created_at, started_at, finished_at`

export class ImpactRepo extends Effect.Service<ImpactRepo>()("impact/ImpactRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const cols = sql.unsafe(columns)
    const agentFilter = (agentId: string | null) => (agentId === null ? sql`` : sql`and agent_id = ${agentId}`)

    const insert = SqlSchema.single({
      Request: NewJob,
      Result: ImpactJobRow,
      execute: (row) =>
        sql`insert into impact_jobs (id, workspace_id, request, document_digests, status, created_by)
            values (${row.id}, ${row.workspaceId}, ${JSON.stringify(row.request)}::jsonb,
                    array(select jsonb_array_elements_text(${JSON.stringify(row.digests)}::jsonb)), 'queued', ${row.createdBy})
            returning ${cols}`
    })
    const find = SqlSchema.findOne({
      Request: Schema.Struct({ workspaceId: Schema.String, id: Schema.String }),
      Result: ImpactJobRow,
      execute: ({ id, workspaceId }) =>
        sql`select ${cols} from impact_jobs where workspace_id = ${workspaceId} and id = ${id}`
    })
    const claim = SqlSchema.findAll({
      Request: Schema.Struct({ workerId: Schema.String, perWorkspace: Schema.Number }),
      Result: ImpactJobRow,
      execute: ({ perWorkspace, workerId }) =>
        sql`update impact_jobs set status = 'running', worker_id = ${workerId}, heartbeat_at = now(),
              started_at = coalesce(started_at, now()), replayed = 0
            where id in (${fairlyQueued(sql, "impact_jobs", perWorkspace, 1)})
            returning ${cols}`
    })
    const count = SqlSchema.single({
      Request: Schema.Struct(Window),
      Result: Schema.Struct({ total: Schema.Number }),
      execute: ({ agentId, end, start, workspaceId }) =>
        sql`select count(*)::int as total from traces where workspace_id = ${workspaceId}
              and created_at >= ${instantOf(start)} and created_at < ${instantOf(end)} ${agentFilter(agentId)}`
    })
    /** A page of retained decisions after `after`, oldest first: the order of a replay. */
    const page = SqlSchema.findAll({
      Request: Schema.Struct({
        ...Window,
        afterAt: Schema.NullOr(Schema.DateFromSelf),
        afterId: Schema.String,
        limit: Schema.Number
      }),
      Result: RetainedRow,
      execute: ({ afterAt, afterId, agentId, end, limit, start, workspaceId }) =>
        sql`select id, agent_id, environment_id, decision, latest_review_outcome,
                   coalesce(jsonb_typeof(payload #> '{response,applied_grant}') = 'object', false) as granted,
                   payload -> 'request' as request, created_at
              from traces where workspace_id = ${workspaceId}
               and created_at >= ${instantOf(start)} and created_at < ${instantOf(end)} ${agentFilter(agentId)}
               ${afterAt === null ? sql`` : sql`and (created_at, id) > (${afterAt}, ${afterId})`}
             order by created_at, id limit ${limit}`
    })
    const landed = SqlSchema.findAll({
      Request: Schema.String,
      Result: Schema.Struct({ trace_id: Schema.String, job_id: Schema.String, seq: Schema.Number }),
      execute: (workspaceId) =>
        sql`select trace_id, job_id, seq from redteam_attacks
             where workspace_id = ${workspaceId} and landed and trace_id is not null order by job_id, seq`
    })

    return dieOnErrors({
      /** Queues a job unless its workspace already has `max` queued or running: none then. */
      insert: (max: number, row: typeof NewJob.Type) =>
        insertWithinCap(sql, "impact_jobs", row.workspaceId, max, insert(row)).pipe(
          Effect.map((result) => (result.inserted ? Option.some(result.value) : Option.none()))
        ),
      find: (workspaceId: string, id: string) => find({ workspaceId, id }),
      /** One queued job for this worker, fairly across workspaces, at most `perWorkspace` running per workspace. */
      claim: (workerId: string, perWorkspace: number) =>
        Effect.map(claim({ workerId, perWorkspace }), (rows) => Option.fromNullable(rows[0])),
      count: (window: ReplayWindow) => Effect.map(count(window), (row) => row.total),
      page,
      landed: (workspaceId: string) =>
        Effect.map(
          landed(workspaceId),
          (rows) => new Map(rows.map((row) => [row.trace_id, { job_id: row.job_id, seq: row.seq }]))
        ),
      // Like every write of a running job: only while this worker still holds it (a stale one may have lost it).
      setTotal: (workerId: string, id: string, total: number) =>
        sql`update impact_jobs set total = ${total}
             where id = ${id} and worker_id = ${workerId} and status = 'running'`,
      /** Records progress (the job's heartbeat); false when this worker no longer holds the job. */
      progress: (workerId: string, id: string, replayed: number) =>
        sql`update impact_jobs set replayed = ${replayed}, heartbeat_at = now()
             where id = ${id} and worker_id = ${workerId} and status = 'running' returning id`.pipe(
          Effect.map((rows) => rows.length > 0)
        ),
      complete: (workerId: string, id: string, replayed: number, result: unknown, digest: string) =>
        sql`update impact_jobs set status = 'completed', replayed = ${replayed}, result = ${JSON.stringify(result)}::jsonb,
                   result_digest = ${digest}, finished_at = now(), worker_id = null
             where id = ${id} and worker_id = ${workerId} and status = 'running'`,
      fail: (workerId: string, id: string, error: string) =>
        sql`update impact_jobs set status = 'failed', error = ${error}, finished_at = now(), worker_id = null
             where id = ${id} and worker_id = ${workerId} and status = 'running'`,
      /** A worker shutting down hands its job back to the queue. */
      release: (workerId: string, id: string) =>
        sql`update impact_jobs set status = 'queued', worker_id = null
             where id = ${id} and worker_id = ${workerId} and status = 'running'`,
      /** Jobs of a worker that stopped heartbeating: queued again (replayed from the start), failed after `maxResumes`. */
      recoverStale: (staleSeconds: number, maxResumes: number) =>
        sql`update impact_jobs set
              status = case when resume_count >= ${maxResumes} then 'failed' else 'queued' end,
              error = case when resume_count >= ${maxResumes}
                           then 'The worker replaying this job stopped ' || resume_count || ' times; giving up.' end,
              finished_at = case when resume_count >= ${maxResumes} then now() end,
              resume_count = resume_count + 1, worker_id = null
            where status = 'running' and (heartbeat_at is null or heartbeat_at < now() - make_interval(secs => ${staleSeconds}))`
    })
  })
}) {}
