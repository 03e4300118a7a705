/**
 * SQL of the approvals queue: the intents that asked for approval (traces
 * awaiting approval, migration 0026's partial index), their grants and
 * denials. Every query takes the workspace id.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { dieOnErrors, lockKey } from "../platform/Sql.js"

export type ApprovalStatus = "pending" | "granted" | "denied"

export const ApprovalRow = Schema.Struct({
  intent_id: Schema.String,
  trace_id: Schema.String,
  agent_id: Schema.String,
  environment_id: Schema.String,
  approval: Schema.Unknown,
  requested_at: Schema.DateFromSelf,
  granted_by: Schema.NullOr(Schema.String),
  expires_at: Schema.NullOr(Schema.DateFromSelf),
  denied_by: Schema.NullOr(Schema.String),
  deny_reason: Schema.NullOr(Schema.String),
  /** The list's sort key: requested (pending), granted or denied at. */
  at: Schema.DateFromSelf
})
export type ApprovalRow = typeof ApprovalRow.Type

const decodeRows = Schema.decodeUnknown(Schema.Array(ApprovalRow))

const Requested = Schema.Struct({ approvers: Schema.Unknown })

const Intent = Schema.Struct({ workspaceId: Schema.String, intentId: Schema.String })

export class ApprovalsRepo extends Effect.Service<ApprovalsRepo>()("authorization/ApprovalsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    /** The latest request for approval of an intent: its `approvers` (any JSON), if it ever asked. */
    const findRequest = SqlSchema.findOne({
      Request: Intent,
      Result: Requested,
      execute: ({ intentId, workspaceId }) =>
        sql`select payload -> 'response' -> 'approval' -> 'approvers' as approvers from traces
            where workspace_id = ${workspaceId} and intent_id = ${intentId}
              and payload -> 'response' ->> 'status' = 'awaiting_approval'
            order by created_at desc limit 1`
    })

    const findUsername = SqlSchema.findOne({
      Request: Schema.String,
      Result: Schema.Struct({ username: Schema.String }),
      execute: (userId) => sql`select username from users where id::text = ${userId}`
    })

    const statusCondition = (status: ApprovalStatus) => {
      switch (status) {
        case "pending":
          return sql`d.intent_id is null and (g.intent_id is null or g.expires_at <= now())`
        case "granted":
          return sql`d.intent_id is null and g.expires_at > now()`
        case "denied":
          return sql`d.intent_id is not null`
      }
    }
    const sortKey = (status: ApprovalStatus) =>
      status === "pending" ? sql`r.requested_at` : status === "granted" ? sql`g.created_at` : sql`d.created_at`

    /**
     * Serializes the decisions on one intent (held until the caller's transaction ends): a grant that read
     * "not denied" writes before a concurrent denial withdraws it, never after.
     */
    const lockIntent = (workspaceId: string, intentId: string) => lockKey(sql, `approval:${workspaceId}:${intentId}`)

    return dieOnErrors({
      findRequest: (workspaceId: string, intentId: string) =>
        findRequest({ workspaceId, intentId }).pipe(Effect.map(Option.map((row) => row.approvers))),
      username: (userId: string) => findUsername(userId).pipe(Effect.map(Option.map((row) => row.username))),
      /**
       * One page of intents in `status`: pending oldest first (the queue), granted and denied newest first.
       * Each intent shows its latest request and when it first asked.
       */
      list: (
        workspaceId: string,
        status: ApprovalStatus,
        limit: number,
        after: Option.Option<{ readonly at: string; readonly id: string }>,
        onlyIntent?: string
      ) => {
        const ascending = status === "pending"
        const position = Option.match(after, {
          onNone: () => sql``,
          onSome: ({ at, id }) =>
            ascending
              ? sql`where (at, intent_id) > (${at}::timestamptz, ${id})`
              : sql`where (at, intent_id) < (${at}::timestamptz, ${id})`
        })
        return sql`select * from (
            select r.intent_id, r.trace_id, r.agent_id, r.environment_id, r.approval, r.requested_at,
                   case when g.expires_at > now() then g.granted_by end as granted_by,
                   case when g.expires_at > now() then g.expires_at end as expires_at,
                   d.denied_by, d.reason as deny_reason, ${sortKey(status)} as at
            from (select distinct on (intent_id) intent_id, id as trace_id, agent_id, environment_id,
                         payload -> 'response' -> 'approval' as approval,
                         min(created_at) over (partition by intent_id) as requested_at
                  from traces
                  where workspace_id = ${workspaceId} and payload -> 'response' ->> 'status' = 'awaiting_approval'
                  order by intent_id, created_at desc) r
            left join approval_grants g on g.workspace_id = ${workspaceId} and g.intent_id = r.intent_id
            left join approval_denials d on d.workspace_id = ${workspaceId} and d.intent_id = r.intent_id
            where ${statusCondition(status)}
            ${onlyIntent === undefined ? sql`` : sql`and r.intent_id = ${onlyIntent}`}) listed
          ${position}
          order by ${ascending ? sql`at, intent_id` : sql`at desc, intent_id desc`}
          limit ${limit + 1}`.pipe(Effect.flatMap(decodeRows))
      },
      lockIntent,
      /** Denies an intent (a second denial keeps the first) and withdraws its grant, in one transaction. */
      deny: (workspaceId: string, intentId: string, deniedBy: string, reason: string | null) =>
        sql.withTransaction(
          Effect.zipRight(
            lockIntent(workspaceId, intentId),
            Effect.zipRight(
              sql`delete from approval_grants where workspace_id = ${workspaceId} and intent_id = ${intentId}`,
              sql`insert into approval_denials (workspace_id, intent_id, denied_by, reason)
                  values (${workspaceId}, ${intentId}, ${deniedBy}, ${reason})
                  on conflict (workspace_id, intent_id) do nothing`
            )
          )
        ),
      isDenied: (workspaceId: string, intentId: string) =>
        sql`select 1 from approval_denials where workspace_id = ${workspaceId} and intent_id = ${intentId}`.pipe(
          Effect.map((rows) => rows.length > 0)
        )
    })
  })
}) {}
