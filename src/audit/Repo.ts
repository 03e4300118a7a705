/** SQL of the audit log. Rows are written only by the triggers of migration 0021; this reads and prunes. */
import { SqlClient } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { dieOnErrors } from "../platform/Sql.js"
import { AuditRow } from "./Domain.js"

export interface AuditFilter {
  readonly resourceType: string | undefined
  readonly resourceId: string | undefined
  readonly actorKind: string | undefined
  readonly actorId: string | undefined
  readonly start: Date | undefined
  readonly end: Date | undefined
}

const HeadRow = Schema.Struct({
  seq: Schema.NumberFromString,
  hash: Schema.NullOr(Schema.String),
  anchor_seq: Schema.NumberFromString,
  anchor_hash: Schema.NullOr(Schema.String),
  anchor_signature: Schema.NullOr(Schema.String),
  anchored_at: Schema.NullOr(Schema.DateFromSelf)
})
export type HeadRow = typeof HeadRow.Type

const decodeRows = Schema.decodeUnknown(Schema.Array(AuditRow))
const decodeHeads = Schema.decodeUnknown(Schema.Array(HeadRow))
const decodeIds = Schema.decodeUnknown(Schema.Array(Schema.Struct({ workspace_id: Schema.String })))
const decodeAnchors = Schema.decodeUnknown(Schema.Array(Schema.Struct({ anchor_seq: Schema.NumberFromString })))

const COLUMNS = `workspace_id, seq::text as seq, id, actor_kind, actor_id, action, resource_type, resource_id,
  before_digest, after_digest, request_id, created_at, prev_hash, hash`

export class AuditRepo extends Effect.Service<AuditRepo>()("audit/AuditRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const columns = sql.literal(COLUMNS)

    /** Newest first (by chain position); `beforeSeq` continues a page. */
    const list = (workspaceId: string, filter: AuditFilter, beforeSeq: Option.Option<number>, limit: number) => {
      const conditions = [
        sql`workspace_id = ${workspaceId}`,
        ...(filter.resourceType === undefined ? [] : [sql`resource_type = ${filter.resourceType}`]),
        ...(filter.resourceId === undefined ? [] : [sql`resource_id = ${filter.resourceId}`]),
        ...(filter.actorKind === undefined ? [] : [sql`actor_kind = ${filter.actorKind}`]),
        ...(filter.actorId === undefined ? [] : [sql`actor_id = ${filter.actorId}`]),
        ...(filter.start === undefined ? [] : [sql`created_at >= ${filter.start}`]),
        ...(filter.end === undefined ? [] : [sql`created_at < ${filter.end}`]),
        ...Option.match(beforeSeq, { onNone: () => [], onSome: (seq) => [sql`seq < ${seq}`] })
      ]
      return sql`select ${columns} from audit_events where ${sql.and(conditions)}
                 order by audit_events.seq desc limit ${limit}`.pipe(Effect.flatMap(decodeRows))
    }

    /** The chain in order, `limit` rows after `afterSeq`. */
    const chainAfter = (workspaceId: string, afterSeq: number, limit: number) =>
      sql`select ${columns} from audit_events where workspace_id = ${workspaceId} and seq > ${afterSeq}
          order by audit_events.seq limit ${limit}`.pipe(Effect.flatMap(decodeRows))

    const head = (workspaceId: string) =>
      sql`select seq::text as seq, hash, anchor_seq::text as anchor_seq, anchor_hash, anchor_signature, anchored_at
          from audit_heads where workspace_id = ${workspaceId}`.pipe(
        Effect.flatMap(decodeHeads),
        Effect.map((rows) => Option.fromNullable(rows[0]))
      )

    /**
     * Where the next prune step ends: of the `batchSize` rows after the anchor, the newest created before
     * `cutoff` (`created_at` never goes backwards along the chain). A short read of the primary key.
     */
    const lastBeforeWithin = (workspaceId: string, cutoff: Date, batchSize: number) =>
      sql`select ${columns} from (
            select * from audit_events
            where workspace_id = ${workspaceId}
              and seq > (select anchor_seq from audit_heads where workspace_id = ${workspaceId})
            order by seq limit ${batchSize}) first_rows
          where created_at < ${cutoff} order by seq desc limit 1`.pipe(
        Effect.flatMap(decodeRows),
        Effect.map((rows) => Option.fromNullable(rows[0]))
      )

    /** Workspaces whose oldest kept audit row is older than `cutoff` (one index probe per workspace). */
    const workspacesWithRowsBefore = (cutoff: Date) =>
      sql`select h.workspace_id from audit_heads h
          where (select e.created_at from audit_events e where e.workspace_id = h.workspace_id
                 order by e.seq limit 1) < ${cutoff}
          order by h.workspace_id`.pipe(
        Effect.flatMap(decodeIds),
        Effect.map((rows) => rows.map((row) => row.workspace_id))
      )

    /**
     * Moves the anchor to `row` (with its signature) and deletes the chain up
     * to it, in one transaction; the head row is locked first, so appends wait.
     * An anchor already past `row` (another pruner) leaves everything as it is.
     */
    const pruneThrough = (row: AuditRow, signature: string) =>
      sql.withTransaction(
        Effect.gen(function* () {
          const locked = yield* sql`select anchor_seq::text as anchor_seq from audit_heads
                                    where workspace_id = ${row.workspace_id} for update`.pipe(
            Effect.flatMap(decodeAnchors)
          )
          if ((locked[0]?.anchor_seq ?? 0) >= row.seq) return 0
          yield* sql`update audit_heads set anchor_seq = ${row.seq}, anchor_hash = ${row.hash},
                     anchor_signature = ${signature}, anchored_at = now()
                     where workspace_id = ${row.workspace_id}`
          const deleted = yield* sql`delete from audit_events
                                     where workspace_id = ${row.workspace_id} and seq <= ${row.seq} returning 1`
          return deleted.length
        })
      )

    /**
     * Runs `effect`'s reads in one read-only snapshot (repeatable read): a walk of the chain in several reads then
     * sees neither a change appended nor a prune committed after it began.
     */
    const inSnapshot = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
      sql
        .withTransaction(
          Effect.zipRight(sql`set transaction isolation level repeatable read, read only`.pipe(Effect.orDie), effect)
        )
        .pipe(Effect.catchTag("SqlError", Effect.die))

    return {
      ...dieOnErrors({ list, chainAfter, head, lastBeforeWithin, workspacesWithRowsBefore, pruneThrough }),
      inSnapshot
    }
  })
}) {}
