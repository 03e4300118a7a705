/**
 * SQL of the authorization domain: approval grants, receipts and provenance fingerprints. Every
 * query takes the workspace id.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { dieOnErrors } from "../platform/Sql.js"

const GrantRow = Schema.Struct({
  intent_id: Schema.String,
  granted_by: Schema.String,
  expires_at: Schema.DateFromSelf
})
export type GrantRow = typeof GrantRow.Type

/** What deciding reads of an intent's approval: its unexpired grant and its denial (either may be null). */
const ApprovalStateRow = Schema.Struct({
  intent_id: Schema.NullOr(Schema.String),
  granted_by: Schema.NullOr(Schema.String),
  expires_at: Schema.NullOr(Schema.DateFromSelf),
  denied: Schema.Boolean,
  deny_reason: Schema.NullOr(Schema.String)
})

/** An intent's approval as deciding reads it. */
export interface ApprovalState {
  readonly grant: Option.Option<GrantRow>
  readonly denial: { readonly reason: string | null } | undefined
}

const StoredGrant = Schema.Struct({ ...GrantRow.fields, created_at: Schema.DateFromSelf })

const ReceiptRow = Schema.Struct({ jws: Schema.String, trace_id: Schema.String, created_at: Schema.DateFromSelf })

const WorkspaceItem = Schema.Struct({ workspaceId: Schema.String, id: Schema.String })

/** A value's keyed HMAC seen in a run or session, with the origin it came from (never the value). */
export const FingerprintRow = Schema.Struct({ fingerprint: Schema.String, origin: Schema.String })
export type FingerprintRow = typeof FingerprintRow.Type

/** A fingerprint to record: its workspace and scope (`run:<id>` or `session:<id>`). */
export interface NewFingerprint extends FingerprintRow {
  readonly workspace_id: string
  readonly scope: string
}

export class AuthorizationRepo extends Effect.Service<AuthorizationRepo>()("authorization/AuthorizationRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const approvalState = SqlSchema.single({
      Request: WorkspaceItem,
      Result: ApprovalStateRow,
      execute: ({ id, workspaceId }) =>
        sql`select g.intent_id, g.granted_by, g.expires_at, d.intent_id is not null as denied, d.reason as deny_reason
            from (select 1) one
            left join approval_grants g on g.workspace_id = ${workspaceId} and g.intent_id = ${id} and g.expires_at > now()
            left join approval_denials d on d.workspace_id = ${workspaceId} and d.intent_id = ${id}`
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

    const findRunEnvironment = SqlSchema.findOne({
      Request: WorkspaceItem,
      Result: Schema.Struct({ environment_id: Schema.String }),
      execute: ({ id, workspaceId }) =>
        sql`select environment_id from runs where workspace_id = ${workspaceId} and id = ${id}`
    })

    const listFingerprints = SqlSchema.findAll({
      Request: Schema.Struct({
        workspaceId: Schema.String,
        scopes: Schema.Array(Schema.String),
        limit: Schema.Number
      }),
      Result: FingerprintRow,
      execute: ({ limit, scopes, workspaceId }) =>
        sql`select fingerprint, origin from provenance_fingerprints
            where workspace_id = ${workspaceId} and scope in ${sql.in(scopes)}
            order by first_seen_at limit ${limit}`
    })

    /**
     * Records fingerprints (a statement for the decision group commit, DecisionWriter.ts): each scope keeps
     * at most `maxPerScope` rows, counted once per scope and statement; a known one is left as it was.
     */
    const insertFingerprintsStatement = (rows: ReadonlyArray<NewFingerprint>, maxPerScope: number) => {
      const json = JSON.stringify(rows)
      return sql`insert into provenance_fingerprints (workspace_id, scope, fingerprint, origin)
        select v.workspace_id, v.scope, v.fingerprint, v.origin
        from (select x.*, row_number() over (partition by x.workspace_id, x.scope) as rank
              from jsonb_to_recordset(${json}::jsonb)
                as x(workspace_id text, scope text, fingerprint text, origin text)) v
        join (select s.workspace_id, s.scope,
                     (select count(*) from provenance_fingerprints p
                      where p.workspace_id = s.workspace_id and p.scope = s.scope) as stored
              from (select distinct y.workspace_id, y.scope
                    from jsonb_to_recordset(${json}::jsonb) as y(workspace_id text, scope text)) s) c
          on c.workspace_id = v.workspace_id and c.scope = v.scope
        where v.rank + c.stored <= ${maxPerScope}
        on conflict do nothing`
    }

    return {
      insertFingerprintsStatement,
      ...dieOnErrors({
        /** The fingerprints of a run or session (under any of `scopes`), oldest first, at most `limit`. */
        listFingerprints: (workspaceId: string, scopes: ReadonlyArray<string>, limit: number) =>
          listFingerprints({ workspaceId, scopes, limit }),
        /** The unexpired grant of an intent and its denial, if any. */
        approvalState: (workspaceId: string, intentId: string) =>
          approvalState({ workspaceId, id: intentId }).pipe(
            Effect.map((row): ApprovalState => ({
              grant:
                row.intent_id === null || row.granted_by === null || row.expires_at === null
                  ? Option.none()
                  : Option.some({ intent_id: row.intent_id, granted_by: row.granted_by, expires_at: row.expires_at }),
              denial: row.denied ? { reason: row.deny_reason } : undefined
            }))
          ),
        /** Grants (or renews) the approval of an intent for `ttlSeconds`. */
        upsertGrant: (
          workspaceId: string,
          intentId: string,
          grantedBy: string,
          note: string | null,
          ttlSeconds: number
        ) => upsertGrant({ workspaceId, intentId, grantedBy, note, ttlSeconds }),
        findReceipt: (workspaceId: string, id: string) => findReceipt({ workspaceId, id }),
        /** The environment of a run of the workspace (none: no such run). */
        runEnvironment: (workspaceId: string, runId: string) =>
          Effect.map(
            findRunEnvironment({ workspaceId, id: runId }),
            Option.map((row) => row.environment_id)
          )
      })
    }
  })
}) {}
