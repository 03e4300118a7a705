/**
 * SQL of the operations tasks: gauges read at scrape time (consumer lag on
 * the database log, outbox backlog, budget reservations) and the retention
 * task's batched deletes. Plain effects over the `SqlClient` (the tasks are
 * not services); a database failure stays a failure, a row that does not
 * decode is a defect.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"

/** Runs a query and decodes its rows with `row`; rows that do not decode are a defect, other failures stay. */
const rowsOf = <A, I>(row: Schema.Schema<A, I>) => {
  const decode = Schema.decodeUnknown(Schema.Array(row))
  return <E, R>(query: Effect.Effect<ReadonlyArray<unknown>, E, R>) =>
    Effect.flatMap(query, (rows) => Effect.orDie(decode(rows)))
}

/** `count(*)::text`, decoded to the number the callers count with. */
const countRows = rowsOf(Schema.Struct({ count: Schema.NumberFromString }))

/** The count of a `select count(*)::text as count ...` (0 without a row). */
const countOf = <E, R>(query: Effect.Effect<ReadonlyArray<unknown>, E, R>) =>
  Effect.map(countRows(query), (rows) => rows[0]?.count ?? 0)

const lagRows = rowsOf(Schema.Struct({ group_id: Schema.String, topic: Schema.String, lag: Schema.NumberFromString }))

/** Per consumer group and topic of the database log: events after its position. */
export const databaseLogLag = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  lagRows(sql`
    select p.group_id, p.topic,
           (select count(*) from event_log l where l.topic = p.topic and l."offset" > p.position)::text as lag
    from consumer_positions p order by p.group_id, p.topic`)
)

/** Rows in the outbox (committed, not yet published). */
export const outboxBacklog = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  countOf(sql`select count(*)::text as count from outbox`)
)

const existsRows = rowsOf(Schema.Struct({ exists: Schema.Boolean }))

/**
 * Budget reservations and leases still holding budget; 0 where
 * `llm_budget_reservations` (0009) does not exist.
 */
export const budgetReservationsInFlight = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const [table] = yield* existsRows(sql`select to_regclass('llm_budget_reservations') is not null as exists`)
  if (table?.exists !== true) return 0
  return yield* countOf(sql`
    select count(*)::text as count from llm_budget_reservations where expires_at > now() and amount_usd_nanos > 0`)
})

// ---- retention: the event plumbing (EventPruning.ts)

const stuckRows = rowsOf(Schema.Struct({ stuck: Schema.Boolean }))

/** Whether any outbox row is older than `cutoff` (a stuck relay may still publish it). */
export const outboxHoldsOlderThan = (cutoff: Date) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      stuckRows(sql`select exists (select 1 from outbox where created_at < ${cutoff}) as stuck`),
      (rows) => rows[0]?.stuck === true
    )
  )

/** Deletes up to `batchSize` dedupe records that can no longer stop a double count; answers how many. */
export const pruneProcessedEventsBatch = (cutoff: Date, batchSize: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    countOf(sql`
      with lagging as (
        select distinct c.group_id from consumer_positions c
        where exists (select 1 from event_log l
                      where l.topic = c.topic and l."offset" > c.position and l.created_at < ${cutoff})
      ), doomed as (
        select p.group_id, p.event_id from processed_events p
        where p.processed_at < ${cutoff}
          and p.group_id not in (select group_id from lagging)
          and not exists (select 1 from outbox o where o.event_id = p.event_id)
        limit ${batchSize}
      ), gone as (
        delete from processed_events p using doomed d
        where p.group_id = d.group_id and p.event_id = d.event_id returning 1
      )
      select count(*)::text as count from gone`)
  )

/** Deletes up to `batchSize` database-log rows older than `cutoff` that every reader has read; answers how many. */
export const pruneEventLogBatch = (cutoff: Date, batchSize: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    countOf(sql`
      with read_by_all as (
        -- A group that has not moved for the whole window is not waited for (as Kafka's retention waits for
        -- none): a retired group, or a process's own group left behind by a crash, kept every later row.
        select topic, min(position) as position from consumer_positions where updated_at >= ${cutoff} group by topic
      ), doomed as (
        select l."offset" from event_log l left join read_by_all r on r.topic = l.topic
        where l.created_at < ${cutoff} and (r.position is null or l."offset" <= r.position)
        limit ${batchSize}
      ), gone as (delete from event_log where "offset" in (select "offset" from doomed) returning 1)
      select count(*)::text as count from gone`)
  )

/** Idempotency keys past their window (src/idempotency): a repeat after it is a new request anyway. */
export const pruneIdempotencyKeysBatch = (cutoff: Date, batchSize: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    countOf(sql`
      with doomed as (
        select workspace_id, idempotency_key from idempotency_keys where created_at < ${cutoff} limit ${batchSize}
      ), gone as (
        delete from idempotency_keys k using doomed d
        where k.workspace_id = d.workspace_id and k.idempotency_key = d.idempotency_key returning 1
      )
      select count(*)::text as count from gone`)
  )

// ---- retention: workspace records (Retention.ts)

const nameRows = rowsOf(Schema.Struct({ name: Schema.String }))

/** Which of `tables` exist (visible on the search path). */
export const presentTables = (tables: ReadonlyArray<string>) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      nameRows(sql`
        select c.relname as name from pg_class c
        where c.relkind in ('r', 'p') and c.relname in ${sql.in(tables)}
          and pg_table_is_visible(c.oid)`),
      (rows) => rows.map((row) => row.name)
    )
  )

/** `retention_days` is a text column: callers check it is a positive integer. */
const RetentionRow = Schema.Struct({ workspace_id: Schema.String, retention_days: Schema.String })
export type RetentionRow = typeof RetentionRow.Type
const retentionRows = rowsOf(RetentionRow)

/** Every workspace's retention setting, by workspace id. */
export const workspaceRetentions = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  retentionRows(sql`select workspace_id, retention_days from workspace_settings order by workspace_id`)
)

/** Deletes up to `batchSize` of the workspace's rows of `table` dated before `cutoff`; answers how many. */
export const deleteExpiredBatch = (
  target: { readonly table: string; readonly timeColumn: string; readonly workspaceColumn: string },
  workspaceId: string,
  cutoff: Date,
  batchSize: number
) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => {
    const table = sql(target.table)
    return countOf(sql`
      with doomed as (
        select ctid from ${table}
        where ${sql(target.workspaceColumn)} = ${workspaceId} and ${sql(target.timeColumn)} < ${cutoff}
        limit ${batchSize}
      ), gone as (delete from ${table} where ctid in (select ctid from doomed) returning 1)
      select count(*)::text as count from gone`)
  })
