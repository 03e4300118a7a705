/**
 * SQL of review queues and their items, rows decoded by Schema. Every query
 * takes the workspace id. Items are traces read through the rules: a trace
 * is in a queue when some rule's conditions hold and its id's hash falls in
 * that rule's sample (`sampleBucket` below, the same for every read).
 */
import { SqlClient, SqlSchema, type Statement } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { CutColumns, cutAtBytes, cutPage } from "../platform/PageBytes.js"
import { dieOnErrors } from "../platform/Sql.js"
import { traceColumns, TraceRow } from "../runs/TraceRepo.js"
import { ReviewRule } from "./Domain.js"

export const QueueRow = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  rules: Schema.Array(ReviewRule),
  sample_rate: Schema.Number,
  created_at: Schema.DateFromSelf,
  updated_at: Schema.DateFromSelf
})
export type QueueRow = typeof QueueRow.Type
const decodeQueues = Schema.decodeUnknown(Schema.Array(QueueRow))

/** A queue as written (insert and update). */
const QueueWrite = Schema.Struct({
  id: Schema.String,
  workspaceId: Schema.String,
  name: Schema.String,
  rules: Schema.Unknown,
  sampleRate: Schema.Number
})

/** A change of a queue: the fields it names (null: kept as they are). */
const QueuePatch = Schema.Struct({
  id: Schema.String,
  workspaceId: Schema.String,
  name: Schema.NullOr(Schema.String),
  rules: Schema.NullOr(Schema.Unknown),
  sampleRate: Schema.NullOr(Schema.Number)
})
export type QueuePatch = typeof QueuePatch.Type

const ItemRow = Schema.Struct({ ...TraceRow.fields, reviewed: Schema.Boolean })
export type ItemRow = typeof ItemRow.Type
const decodeItems = Schema.decodeUnknown(Schema.Array(Schema.extend(ItemRow, CutColumns)))

const Progress = Schema.Struct({ total: Schema.NumberFromString, reviewed: Schema.NumberFromString })

/** Where a page of items resumes: reviewed after pending, newest first within each. */
export interface ItemPosition {
  readonly reviewed: boolean
  readonly at: string
  readonly id: string
}

export interface QueueWrite {
  readonly id: string
  readonly workspaceId: string
  readonly name: string
  readonly rules: ReadonlyArray<ReviewRule>
  readonly sampleRate: number
}

const WorkspaceItem = Schema.Struct({ workspaceId: Schema.String, id: Schema.String })

export class ReviewQueueRepo extends Effect.Service<ReviewQueueRepo>()("reviewqueues/ReviewQueueRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    // The first 32 bits of md5(trace id) over 2^32: a trace's fixed place in [0, 1) for sampling.
    const sampleBucket = sql`(('x' || substr(md5(id), 1, 8))::bit(32)::bigint / 4294967296.0)`

    const ruleCondition = (rule: ReviewRule, queueRate: number): Statement.Fragment => {
      const conditions: Array<Statement.Fragment> = [sql`${sampleBucket} < ${rule.sample_rate ?? queueRate}`]
      if (rule.agent_id !== undefined) conditions.push(sql`agent_id = ${rule.agent_id}`)
      if (rule.effect !== undefined) conditions.push(sql`decision = ${rule.effect}`)
      if (rule.environment_id !== undefined) conditions.push(sql`environment_id = ${rule.environment_id}`)
      if (rule.event_kind !== undefined) conditions.push(sql`payload -> 'request' ->> 'kind' = ${rule.event_kind}`)
      if (rule.policy_id !== undefined) {
        conditions.push(
          sql`payload -> 'response' -> 'findings' @> ${JSON.stringify([{ policy_id: rule.policy_id }])}::jsonb`
        )
      }
      return sql`(${sql.and(conditions)})`
    }
    const inQueue = (workspaceId: string, queue: QueueRow) =>
      sql`workspace_id = ${workspaceId} and ${sql.or(queue.rules.map((rule) => ruleCondition(rule, queue.sample_rate)))}`

    const find = SqlSchema.findOne({
      Request: WorkspaceItem,
      Result: QueueRow,
      execute: ({ id, workspaceId }) =>
        sql`select id, name, rules, sample_rate, created_at, updated_at from review_queues
            where workspace_id = ${workspaceId} and id = ${id}`
    })
    const insert = SqlSchema.single({
      Request: QueueWrite,
      Result: QueueRow,
      execute: (queue) =>
        sql`insert into review_queues (id, workspace_id, name, rules, sample_rate)
            values (${queue.id}, ${queue.workspaceId}, ${queue.name}, ${JSON.stringify(queue.rules)}, ${queue.sampleRate})
            returning id, name, rules, sample_rate, created_at, updated_at`
    })
    // The fields a change names replace the row's current ones in the statement itself, so two changes of
    // different fields made at once both hold (neither writes back a value it read before the other).
    const update = SqlSchema.findOne({
      Request: QueuePatch,
      Result: QueueRow,
      execute: (patch) =>
        sql`update review_queues set name = coalesce(${patch.name}, name),
              rules = coalesce(${patch.rules === null ? null : JSON.stringify(patch.rules)}::jsonb, rules),
              sample_rate = coalesce(${patch.sampleRate}, sample_rate), updated_at = now()
            where workspace_id = ${patch.workspaceId} and id = ${patch.id}
            returning id, name, rules, sample_rate, created_at, updated_at`
    })

    return dieOnErrors({
      find: (workspaceId: string, id: string) => find({ workspaceId, id }),
      /** Newest first, before `before` (a page cursor's position). */
      list: (workspaceId: string, limit: number, before: Option.Option<{ readonly at: string; readonly id: string }>) =>
        sql`select id, name, rules, sample_rate, created_at, updated_at from review_queues
            where workspace_id = ${workspaceId}
            ${Option.match(before, {
              onNone: () => sql``,
              onSome: (p) => sql`and (created_at, id) < (${p.at}::timestamptz, ${p.id})`
            })}
            order by created_at desc, id desc limit ${limit + 1}`.pipe(Effect.flatMap(decodeQueues)),
      insert: (row: QueueWrite) => insert(row),
      /** None when no such queue. */
      update: (patch: QueuePatch) => update(patch),
      remove: (workspaceId: string, id: string) =>
        sql`delete from review_queues where workspace_id = ${workspaceId} and id = ${id} returning id`.pipe(
          Effect.map((rows) => rows.length > 0)
        ),
      /**
       * One page of the queue's traces: not yet reviewed first, then reviewed; newest first within each. Cut
       * after the trace whose payload (JSON bytes) reaches `maxBytes` (at least one); `more` when traces follow.
       * The sizes are summed in the database, so traces past the budget are neither sent nor decoded.
       */
      items: (
        workspaceId: string,
        queue: QueueRow,
        limit: number,
        after: Option.Option<ItemPosition>,
        maxBytes: number
      ) =>
        cutAtBytes(
          sql,
          sql`select ${traceColumns(sql)}, latest_review_outcome is not null as reviewed
              from traces where ${inQueue(workspaceId, queue)}
              ${Option.match(after, {
                onNone: () => sql``,
                onSome: (p) =>
                  sql`and ((latest_review_outcome is not null)::int > ${p.reviewed ? 1 : 0}
                           or ((latest_review_outcome is not null) = ${p.reviewed}
                               and (created_at, id) < (${p.at}::timestamptz, ${p.id})))`
              })}
              order by (latest_review_outcome is not null), created_at desc, id desc
              limit ${limit + 1}`,
          sql`reviewed, created_at desc, id desc`,
          sql`octet_length(payload::text)`,
          maxBytes
        ).pipe(
          Effect.flatMap(decodeItems),
          Effect.map((rows) => cutPage(rows, limit))
        ),
      progress: (workspaceId: string, queue: QueueRow) =>
        sql`select count(*)::text as total, count(latest_review_outcome)::text as reviewed
            from traces where ${inQueue(workspaceId, queue)}`.pipe(
          Effect.flatMap((rows) => Schema.decodeUnknown(Progress)(rows[0]))
        )
    })
  })
}) {}
