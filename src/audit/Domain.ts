/** The audit log's wire and row shapes (docs/audit.md). */
import { Schema } from "effect"
import { CursorParam, Identifier, InstantParam, LimitParam, Timestamp } from "../platform/Schemas.js"

export const ActorKind = Schema.Literal("user", "key", "system")

export const AuditActor = Schema.Struct({ kind: ActorKind, id: Schema.String })

/** One audit event as the API answers it. */
export const AuditEvent = Schema.Struct({
  id: Schema.String,
  workspace_id: Schema.String,
  seq: Schema.Number,
  actor: AuditActor,
  action: Schema.String,
  resource_type: Schema.String,
  resource_id: Schema.String,
  before_digest: Schema.NullOr(Schema.String),
  after_digest: Schema.NullOr(Schema.String),
  request_id: Schema.NullOr(Schema.String),
  created_at: Timestamp,
  prev_hash: Schema.NullOr(Schema.String),
  hash: Schema.String
}).annotations({ identifier: "AuditEvent" })
export type AuditEvent = typeof AuditEvent.Type

/** Value of the `audit` topic (key: workspace id); written by the row triggers of migration 0021. */
export const AuditEventMessage = Schema.Struct({
  schema_version: Schema.Literal(1),
  ...AuditEvent.fields
}).annotations({ identifier: "AuditEventMessage" })

/** `actor` filter: `user:<id>`, `key:<id>` or `system`. */
const ActorParam = Schema.String.pipe(
  Schema.maxLength(200),
  Schema.pattern(/^(system|(user|key):.+)$/, { message: () => "must be user:<id>, key:<id> or system" })
)

export const ListAuditEventsParams = Schema.Struct({
  resource_type: Schema.optional(Identifier),
  resource_id: Schema.optional(Identifier),
  actor: Schema.optional(ActorParam),
  start: Schema.optional(InstantParam),
  end: Schema.optional(InstantParam),
  limit: Schema.optional(LimitParam()),
  cursor: Schema.optional(CursorParam)
})
export type ListAuditEventsParams = typeof ListAuditEventsParams.Type

export const AuditEventPage = Schema.Struct({
  audit_events: Schema.Array(AuditEvent),
  next_cursor: Schema.optional(Schema.String)
})

export const VerifyResult = Schema.Struct({
  valid: Schema.Boolean,
  /** Rows walked (from the anchor, if the chain was pruned, to the head). */
  checked: Schema.Number,
  /** Id of the first row whose hash or link does not check; null when the chain holds. */
  first_break: Schema.NullOr(Schema.String),
  /** Where the walk started: the signed checkpoint left by pruning; null when nothing was pruned. */
  anchor: Schema.NullOr(Schema.Struct({ seq: Schema.Number, hash: Schema.String, signature_valid: Schema.Boolean }))
}).annotations({ identifier: "AuditVerifyResult" })
export type VerifyResult = typeof VerifyResult.Type

/** A stored row (`seq` selected as text: bigint). */
export const AuditRow = Schema.Struct({
  workspace_id: Schema.String,
  seq: Schema.NumberFromString,
  id: Schema.String,
  actor_kind: ActorKind,
  actor_id: Schema.String,
  action: Schema.String,
  resource_type: Schema.String,
  resource_id: Schema.String,
  before_digest: Schema.NullOr(Schema.String),
  after_digest: Schema.NullOr(Schema.String),
  request_id: Schema.NullOr(Schema.String),
  created_at: Schema.DateFromSelf,
  prev_hash: Schema.NullOr(Schema.String),
  hash: Schema.String
})
export type AuditRow = typeof AuditRow.Type

export const toAuditEvent = (row: AuditRow): AuditEvent => ({
  id: row.id,
  workspace_id: row.workspace_id,
  seq: row.seq,
  actor: { kind: row.actor_kind, id: row.actor_id },
  action: row.action,
  resource_type: row.resource_type,
  resource_id: row.resource_id,
  before_digest: row.before_digest,
  after_digest: row.after_digest,
  request_id: row.request_id,
  created_at: row.created_at.toISOString(),
  prev_hash: row.prev_hash,
  hash: row.hash
})
