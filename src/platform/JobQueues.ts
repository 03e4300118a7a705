/**
 * What the red-team and impact job queues share (docs/redteam.md#queue-fairness):
 * - fair claiming: a workspace that queues many jobs must not make every other
 *   workspace wait behind all of them;
 * - a per-workspace cap on queued and running jobs, checked as a job is queued.
 * Both tables have `id`, `workspace_id`, `status` (`queued`, `running`, ...),
 * `created_at` and `started_at`.
 */
import type { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { writeWithinCount } from "./WorkspaceCaps.js"

export type JobTable = "redteam_jobs" | "impact_jobs"

/**
 * The ids of up to `limit` queued jobs to claim now, locked (`for update skip
 * locked`, so workers of several instances never claim one job twice), for the
 * `where id in (...)` of a claiming update.
 *
 * Each queued job's slot is its workspace's running jobs plus its rank among
 * that workspace's queued jobs (oldest first): claiming in slot order takes the
 * first job of every waiting workspace before the second of any. A slot above
 * `perWorkspace` is not claimed (at most that many run per workspace). Equal
 * slots go to the workspace whose last job started longest ago (never: first),
 * so one that just had its turn does not take the next on age alone, then
 * oldest first. Ranks count jobs other workers are claiming at that moment
 * (still queued in this snapshot), so concurrent claims stay within the cap.
 */
export const fairlyQueued = (sql: SqlClient.SqlClient, table: JobTable, perWorkspace: number, limit: number) => {
  const jobs = sql(table)
  return sql`with queued as (
      select id, workspace_id, created_at,
             row_number() over (partition by workspace_id order by created_at, id) as rank
        from ${jobs} where status = 'queued'),
    waiting as (
      select w.workspace_id,
             (select count(*) from ${jobs} r where r.workspace_id = w.workspace_id and r.status = 'running') as running,
             (select max(s.started_at) from ${jobs} s where s.workspace_id = w.workspace_id) as last_started
        from (select distinct workspace_id from queued) w)
    select j.id from ${jobs} j
      join queued q on q.id = j.id
      join waiting w on w.workspace_id = q.workspace_id
     where j.status = 'queued' and w.running + q.rank <= ${perWorkspace}
     order by w.running + q.rank, w.last_started nulls first, q.created_at, q.id
     for update of j skip locked limit ${limit}`
}

/**
 * Runs `insert` (the job's insert) unless the workspace already has `max` queued or running jobs in `table`
 * (`writeWithinCount`): answers whether it ran.
 */
export const insertWithinCap = <A, E, R>(
  sql: SqlClient.SqlClient,
  table: JobTable,
  workspaceId: string,
  max: number,
  insert: Effect.Effect<A, E, R>
) =>
  writeWithinCount(
    sql,
    `${table}:${workspaceId}`,
    sql`select count(*)::int as stored from ${sql(table)}
         where workspace_id = ${workspaceId} and status in ('queued', 'running')`,
    max,
    Effect.succeed(false),
    insert
  ).pipe(
    Effect.map(
      Option.match({
        onNone: () => ({ inserted: false as const }),
        onSome: (value) => ({ inserted: true as const, value })
      })
    )
  )
