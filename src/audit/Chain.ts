/**
 * The audit chain's two halves on the application side: naming the actor and
 * request id of a transaction (the row triggers of migration 0021 read them),
 * and recomputing a row's hash the way the trigger computed it.
 */
import { SqlClient } from "@effect/sql"
import { createHash } from "node:crypto"
import { Effect, Option } from "effect"
import { CurrentRequest } from "../http/RequestInfo.js"
import { type Caller, CurrentCaller } from "../identity/Authentication.js"
import { transactionOf } from "../platform/Sql.js"
import type { AuditRow } from "./Domain.js"

/** `user:<user id>` or `key:<api key id>`: the form the trigger splits into actor kind and id. */
export const actorOf = (caller: Caller) =>
  caller.kind === "user"
    ? `user:${caller.userId ?? caller.principalId}`
    : `key:${caller.apiKeyId ?? caller.principalId}`

/**
 * Names the caller and request of the current transaction (transaction-local
 * settings, so a pooled connection carries nothing over). Outside a request
 * (workers, start-up) it does nothing and the triggers record `system`.
 * Reads the context with `serviceOption`, so no caller signature changes.
 */
export const setAuditActor = Effect.gen(function* () {
  const caller = yield* Effect.serviceOption(CurrentCaller)
  const request = yield* Effect.serviceOption(CurrentRequest)
  if (Option.isNone(caller) && Option.isNone(request)) return
  const sql = yield* SqlClient.SqlClient
  const actor = Option.match(caller, { onNone: () => "", onSome: actorOf })
  const requestId = Option.match(request, { onNone: () => "", onSome: (info) => info.requestId })
  yield* sql`select set_config('guardrail.audit_actor', ${actor}, true), set_config('guardrail.audit_request', ${requestId}, true)`
}).pipe(Effect.orDie)

/**
 * Runs `effect` in a transaction attributed to the current caller and request:
 * wrap a write path that does not go through `ConfigChanges.change` with it.
 * Nested in another transaction it becomes a savepoint of that one.
 */
export const attributed = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => transactionOf(sql)(Effect.zipRight(setAuditActor, effect)))

/** A field of the hashed text: UTF-8 length, colon, value; `~` for null (mirrors SQL `audit_field`). */
const field = (value: string | null) => (value === null ? "~" : `${Buffer.byteLength(value, "utf8")}:${value}`)

/** The hash a row must carry: sha-256 over its predecessor's hash and its own fields, in the trigger's order. */
export const rowHash = (row: AuditRow, prevHash: string | null) =>
  createHash("sha256")
    .update(
      [
        prevHash,
        row.id,
        row.workspace_id,
        String(row.seq),
        row.actor_kind,
        row.actor_id,
        row.action,
        row.resource_type,
        row.resource_id,
        row.before_digest,
        row.after_digest,
        row.request_id,
        String(row.created_at.getTime())
      ]
        .map(field)
        .join("|"),
      "utf8"
    )
    .digest("hex")

/** `attributed` with the SQL client captured, for handler layers (their handlers then need no SqlClient). */
export const auditedWrites = Effect.map(
  SqlClient.SqlClient,
  (sql) =>
    <A, E, R>(effect: Effect.Effect<A, E, R>) =>
      attributed(effect).pipe(Effect.provideService(SqlClient.SqlClient, sql))
)

/**
 * `auditedWrites` for a write whose input is checked first: `check` runs before the transaction opens, `write`
 * (given what the check answered) inside it. A check may wait (an outbound URL's DNS lookup, up to 3 s); inside
 * the transaction it would hold a pooled connection idle meanwhile, and a few such requests would starve every
 * other request of connections.
 */
export const checkedWrites = Effect.map(
  auditedWrites,
  (audited) =>
    <C, E1, R1, A, E2, R2>(check: Effect.Effect<C, E1, R1>, write: (checked: C) => Effect.Effect<A, E2, R2>) =>
      Effect.flatMap(check, (checked) => audited(write(checked)))
)
