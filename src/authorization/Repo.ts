/** SQL of the authorization domain: approval grants and receipts. Every query takes the workspace id. */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Schema } from "effect"
import { dieOnErrors } from "../platform/Sql.js"

const GrantRow = Schema.Struct({
  intent_id: Schema.String,
  granted_by: Schema.String,
  expires_at: Schema.DateFromSelf
})
export type GrantRow = typeof GrantRow.Type

const StoredGrant = Schema.Struct({ ...GrantRow.fields, created_at: Schema.DateFromSelf })

const ReceiptRow = Schema.Struct({ jws: Schema.String, trace_id: Schema.String, created_at: Schema.DateFromSelf })

const WorkspaceItem = Schema.Struct({ workspaceId: Schema.String, id: Schema.String })

export class AuthorizationRepo extends Effect.Service<AuthorizationRepo>()("authorization/AuthorizationRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const activeGrant = SqlSchema.findOne({
      Request: WorkspaceItem,
      Result: GrantRow,
      execute: ({ id, workspaceId }) =>
        sql`select intent_id, granted_by, expires_at from approval_grants
            where workspace_id = ${workspaceId} and intent_id = ${id} and expires_at > now()`
    })

    const upsertGrant = SqlSchema.single({
      Request: Schema.Struct({
        workspaceId: Schema.String,
        intentId: Schema.String,
        grantedBy: Schema.String,
        note: Schema.NullOr(Schema.String),
        ttlSeconds: Schema.Number
      }),
      Result: StoredGrant,
      execute: (grant) =>
        sql`insert into approval_grants (workspace_id, intent_id, granted_by, note, expires_at)
            values (${grant.workspaceId}, ${grant.intentId}, ${grant.grantedBy}, ${grant.note},
                    now() + make_interval(secs => ${grant.ttlSeconds}))
            on conflict (workspace_id, intent_id) do update set granted_by = excluded.granted_by, note = excluded.note,
              expires_at = excluded.expires_at, created_at = now()
            returning intent_id, granted_by, expires_at, created_at`
    })

    const findReceipt = SqlSchema.findOne({
      Request: WorkspaceItem,
      Result: ReceiptRow,
      execute: ({ id, workspaceId }) =>
        sql`select jws, trace_id, created_at from receipts where workspace_id = ${workspaceId} and id = ${id}`
    })

    return dieOnErrors({
      /** The unexpired grant of an intent, if any. */
      activeGrant: (workspaceId: string, intentId: string) => activeGrant({ workspaceId, id: intentId }),
      /** Grants (or renews) the approval of an intent for `ttlSeconds`. */
      upsertGrant: (
        workspaceId: string,
        intentId: string,
        grantedBy: string,
        note: string | null,
        ttlSeconds: number
      ) => upsertGrant({ workspaceId, intentId, grantedBy, note, ttlSeconds }),
      findReceipt: (workspaceId: string, id: string) => findReceipt({ workspaceId, id })
    })
  })
}) {}
