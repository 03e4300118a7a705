/** SQL of idempotency keys; every query takes the workspace id. */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Schema } from "effect"
import { dieOnErrors } from "../platform/Sql.js"
import { IDEMPOTENCY_WINDOW_HOURS } from "./Domain.js"

const KeyRef = Schema.Struct({ workspaceId: Schema.String, key: Schema.String })
const Claim = Schema.Struct({ ...KeyRef.fields, digest: Schema.String })

const KeyRow = Schema.Struct({ request_digest: Schema.String, response: Schema.NullOr(Schema.Unknown) })
export type KeyRow = typeof KeyRow.Type

/** A claim left in flight this long was abandoned (its process died): the next request may take it over. */
const ABANDONED_AFTER_SECONDS = 120

export class IdempotencyRepo extends Effect.Service<IdempotencyRepo>()("idempotency/IdempotencyRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    /** Claims the key (a new one, or one expired or abandoned); answers whether this request holds it. */
    const claim = SqlSchema.findOne({
      Request: Claim,
      Result: Schema.Struct({ claimed: Schema.Boolean }),
      execute: ({ workspaceId, key, digest }) =>
        sql`insert into idempotency_keys (workspace_id, idempotency_key, request_digest)
            values (${workspaceId}, ${key}, ${digest})
            on conflict (workspace_id, idempotency_key) do update
              set request_digest = excluded.request_digest, response = null, created_at = now()
              where idempotency_keys.created_at < now() - make_interval(hours => ${IDEMPOTENCY_WINDOW_HOURS})
                 or (idempotency_keys.response is null
                     and idempotency_keys.created_at < now() - make_interval(secs => ${ABANDONED_AFTER_SECONDS}))
            returning true as claimed`
    })

    const find = SqlSchema.findOne({
      Request: KeyRef,
      Result: KeyRow,
      execute: ({ workspaceId, key }) =>
        sql`select request_digest, response from idempotency_keys
            where workspace_id = ${workspaceId} and idempotency_key = ${key}`
    })

    const complete = SqlSchema.void({
      Request: Schema.Struct({ ...KeyRef.fields, response: Schema.String }),
      execute: ({ workspaceId, key, response }) =>
        sql`update idempotency_keys set response = ${response}::jsonb
            where workspace_id = ${workspaceId} and idempotency_key = ${key} and response is null`
    })

    /** Gives the key up after the request failed, so a retry runs it again. */
    const release = SqlSchema.void({
      Request: KeyRef,
      execute: ({ workspaceId, key }) =>
        sql`delete from idempotency_keys
            where workspace_id = ${workspaceId} and idempotency_key = ${key} and response is null`
    })

    return dieOnErrors({ claim, find, complete, release })
  })
}) {}
