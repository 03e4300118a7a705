/**
 * Schemas of the lifecycle endpoints: versions of policies, agent profiles, tool metadata and
 * label policies, and rollback (docs/policies.md, "Lifecycle").
 */
import { Schema } from "effect"
import type { Caller } from "../identity/Authentication.js"
import { CursorParam, LimitParam, Timestamp } from "../platform/Schemas.js"
import { Agent, LabelPolicy, ToolMetadataEntry } from "./Domain.js"
import type { PolicyAuthor, PolicyVersionRow } from "./Repo.js"

const CreatedBy = Schema.Struct({
  kind: Schema.Literal("user", "key", "system").annotations({
    description: "user or key (an API key); system for versions recorded when versioning was introduced"
  }),
  id: Schema.String
})

/** What every version says besides its content: its number, when and who. */
const versionFields = { version: Schema.Int, created_at: Timestamp, created_by: CreatedBy }

/** The most versions one page of a versions list holds (`limit` above it is clamped). */
export const VERSIONS_PAGE_CAP = 100

/** Query of the versions lists: a page of `limit` (default 50, at most 100) below `cursor`. */
export const VersionsPageParams = Schema.Struct({
  limit: Schema.optional(LimitParam()),
  cursor: Schema.optional(CursorParam)
})
export type VersionsPageQuery = typeof VersionsPageParams.Type

/** One page of versions, newest first; `next_cursor` when older ones follow. */
const versionsOf = <S extends Schema.Schema.Any>(version: S, identifier: string) =>
  Schema.Struct({
    versions: Schema.Array(version),
    next_cursor: Schema.optional(
      Schema.String.annotations({ description: "Present when older versions follow: pass it as cursor" })
    )
  }).annotations({ identifier })

export const PolicyVersion = Schema.Struct({
  ...versionFields,
  source_yaml: Schema.String,
  enabled: Schema.Boolean
}).annotations({ identifier: "PolicyVersion" })
export const PolicyVersions = versionsOf(PolicyVersion, "PolicyVersions")

export const Rollback = Schema.Struct({
  version: Schema.Int.pipe(Schema.between(1, 2_147_483_647)).annotations({
    description: "The version whose document becomes current again, as a new version"
  })
}).annotations({ identifier: "Rollback" })

export const AgentVersion = Schema.Struct({
  ...versionFields,
  profile: Agent,
  source_text: Schema.String.annotations({ description: "The document as written (YAML or JSON)" })
}).annotations({ identifier: "AgentVersion" })
export const AgentVersions = versionsOf(AgentVersion, "AgentVersions")

export const ToolMetadataVersion = Schema.Struct({ ...versionFields, ...ToolMetadataEntry.fields }).annotations({
  identifier: "ToolMetadataVersion"
})
export const ToolMetadataVersions = versionsOf(ToolMetadataVersion, "ToolMetadataVersions")

export const LabelPolicyVersion = Schema.Struct({ ...versionFields, ...LabelPolicy.fields }).annotations({
  identifier: "LabelPolicyVersion"
})
export const LabelPolicyVersions = versionsOf(LabelPolicyVersion, "LabelPolicyVersions")

/**
 * A stored agent profile (a JSON column or a recorded version): those stored before `canaries` existed
 * (and the versions migration 0022 copied from them) read as having none.
 */
export const withCanaries = <P extends { readonly canaries?: ReadonlyArray<string> | undefined }>(
  profile: P
): P & { readonly canaries: ReadonlyArray<string> } => ({ ...profile, canaries: profile.canaries ?? [] })

/** Who a caller is, as a version's `created_by`. */
export const authorOf = (caller: Caller): PolicyAuthor =>
  caller.kind === "user"
    ? { kind: "user", id: caller.userId ?? caller.principalId }
    : { kind: "key", id: caller.apiKeyId ?? caller.principalId }

const authorKind = (kind: string): "user" | "key" | "system" => (kind === "user" || kind === "key" ? kind : "system")

/** A stored version's number, time and author, as the API shows them. */
export const versionHeader = (row: {
  readonly version: number
  readonly created_at: Date
  readonly created_by_kind: string
  readonly created_by_id: string
}) => ({
  version: row.version,
  created_at: row.created_at.toISOString(),
  created_by: { kind: authorKind(row.created_by_kind), id: row.created_by_id }
})

export const toPolicyVersion = (row: PolicyVersionRow): typeof PolicyVersion.Type => ({
  ...versionHeader(row),
  source_yaml: row.source_yaml,
  enabled: row.enabled
})
