/** Rows of the catalog tables, as CatalogRepo (Repo.ts) decodes them with Schema. */
import { Schema } from "effect"

export const AgentRow = Schema.Struct({
  agent_id: Schema.String,
  profile: Schema.Unknown,
  source_text: Schema.String,
  version: Schema.Int
})
export type AgentRow = typeof AgentRow.Type

export const PolicyRow = Schema.Struct({
  id: Schema.String,
  description: Schema.String,
  family: Schema.String,
  severity: Schema.String,
  action: Schema.String,
  enabled: Schema.Boolean,
  owner_agent_id: Schema.NullOr(Schema.String),
  source_yaml: Schema.String,
  document: Schema.Unknown,
  origin: Schema.NullOr(Schema.String),
  invalid_reason: Schema.NullOr(Schema.String),
  version: Schema.Int
})
export type PolicyRow = typeof PolicyRow.Type

export const PolicyVersionRow = Schema.Struct({
  version: Schema.Int,
  source_yaml: Schema.String,
  document: Schema.Unknown,
  enabled: Schema.Boolean,
  created_by_kind: Schema.String,
  created_by_id: Schema.String,
  created_at: Schema.DateFromSelf
})
export type PolicyVersionRow = typeof PolicyVersionRow.Type
export const NamedPolicyVersionRow = Schema.Struct({ policy_id: Schema.String, ...PolicyVersionRow.fields })

export const LabelPolicyRow = Schema.Struct({
  origin: Schema.String,
  enabled: Schema.Boolean,
  confidentiality: Schema.Unknown,
  integrity: Schema.Unknown,
  trust: Schema.Unknown,
  version: Schema.Int
})
export type LabelPolicyRow = typeof LabelPolicyRow.Type

export const ToolMetadataRow = Schema.Struct({
  tool: Schema.String,
  enabled: Schema.Boolean,
  metadata: Schema.Unknown,
  version: Schema.Int
})
export type ToolMetadataRow = typeof ToolMetadataRow.Type

export const KnowledgeSourceRow = Schema.Struct({
  id: Schema.String,
  kind: Schema.String,
  title: Schema.String,
  location: Schema.NullOr(Schema.String),
  status: Schema.String,
  metadata: Schema.Unknown,
  file_name: Schema.NullOr(Schema.String),
  media_type: Schema.NullOr(Schema.String),
  byte_size: Schema.NullOr(Schema.Number),
  created_at: Schema.DateFromSelf,
  updated_at: Schema.DateFromSelf,
  last_indexed_at: Schema.NullOr(Schema.DateFromSelf)
})
export type KnowledgeSourceRow = typeof KnowledgeSourceRow.Type

/** `bytea`, as node-postgres returns it. */
const BufferFromSelf = Schema.declare((value: unknown): value is Buffer => Buffer.isBuffer(value), {
  identifier: "BufferFromSelf"
})

export const KnowledgeSourceFileRow = Schema.Struct({
  file_name: Schema.NullOr(Schema.String),
  media_type: Schema.NullOr(Schema.String),
  byte_size: Schema.NullOr(Schema.Number),
  data: Schema.NullOr(BufferFromSelf)
})
