/** SQL of idempotency keys; every query takes the workspace id. */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Schema } from "effect"
import { dieOnErrors } from "../platform/Sql.js"
import { IDEMPOTENCY_WINDOW_HOURS } from "./Domain.js"

const KeyRef = Schema.Struct({ workspaceId: Schema.String, key: Schema.String })
/** A claim's holder: the token it claimed the key with. */
const Held = Schema.Struct({ ...KeyRef.fields, token: Schema.String })
const Claim = Schema.Struct({ ...Held.fields, digest: Schema.String, abandonedAfterMillis: Schema.Number })

const KeyRow = Schema.Struct({ request_digest: Schema.String, response: Schema.NullOr(Schema.Unknown) })
export type KeyRow = typeof KeyRow.Type

export class IdempotencyRepo extends Effect.Service<IdempotencyRepo>()("idempotency/IdempotencyRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    /**
     * Claims the key (a new one, or one expired, or in flight and not renewed for `abandonedAfterMillis`: its
     * process died); answers whether this request holds it.
     */
    const claim = SqlSchema.findOne({
      Request: Claim,
      Result: Schema.Struct({ claimed: Schema.Boolean }),
      execute: ({ workspaceId, key, digest, token, abandonedAfterMillis }) =>
        sql`insert into idempotency_keys (workspace_id, idempotency_key, request_digest, claim_token)
            values (${workspaceId}, ${key}, ${digest}, ${token})
            on conflict (workspace_id, idempotency_key) do update
              set request_digest = excluded.request_digest, response = null, created_at = now(),
                  claim_token = excluded.claim_token
              where idempotency_keys.created_at < now() - make_interval(hours => ${IDEMPOTENCY_WINDOW_HOURS})
                 or (idempotency_keys.response is null
                     and idempotency_keys.created_at < now() - make_interval(secs => ${abandonedAfterMillis / 1000}))
            returning true as claimed`
    })

    /** The holder, still running: its claim is not abandoned. */
    const renew = SqlSchema.void({
      Request: Held,
      execute: ({ workspaceId, key, token }) =>
        sql`update idempotency_keys set created_at = now()
            where workspace_id = ${workspaceId} and idempotency_key = ${key}
              and response is null and claim_token = ${token}`
    })

    const find = SqlSchema.findOne({
      Request: KeyRef,
      Result: KeyRow,
      execute: ({ workspaceId, key }) =>
        sql`select request_digest, response from idempotency_keys
            where workspace_id = ${workspaceId} and idempotency_key = ${key}`
    })

    const complete = SqlSchema.void({
      Request: Schema.Struct({ ...Held.fields, response: Schema.String }),
      execute: ({ workspaceId, key, token, response }) =>
        sql`update idempotency_keys set response = ${response}::jsonb
            where workspace_id = ${workspaceId} and idempotency_key = ${key}
              and response is null and claim_token = ${token}`
    })

    /** Gives the key up after the request failed, so a retry runs it again. */
    const release = SqlSchema.void({
      Request: Held,
      execute: ({ workspaceId, key, token }) =>
        sql`delete from idempotency_keys
            where workspace_id = ${workspaceId} and idempotency_key = ${key}
              and response is null and claim_token = ${token}`
    })

    return dieOnErrors({ claim, renew, find, complete, release })
  })
}) {}
