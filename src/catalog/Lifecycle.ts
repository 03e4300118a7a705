/** Schemas of the policy lifecycle endpoints: versions and rollback (docs/policies.md, "Lifecycle"). */
import { Schema } from "effect"
import type { Caller } from "../identity/Authentication.js"
import { Timestamp } from "../platform/Schemas.js"
import type { PolicyAuthor, PolicyVersionRow } from "./Repo.js"

export const PolicyVersion = Schema.Struct({
  version: Schema.Int,
  source_yaml: Schema.String,
  enabled: Schema.Boolean,
  created_at: Timestamp,
  created_by: Schema.Struct({
    kind: Schema.Literal("user", "key", "system").annotations({
      description: "user or key (an API key); system for versions recorded when versioning was introduced"
    }),
    id: Schema.String
  })
}).annotations({ identifier: "PolicyVersion" })

export const PolicyVersions = Schema.Struct({ versions: Schema.Array(PolicyVersion) }).annotations({
  identifier: "PolicyVersions"
})

export const Rollback = Schema.Struct({
  version: Schema.Int.pipe(Schema.between(1, 2_147_483_647)).annotations({
    description: "The version whose document becomes current again, as a new version"
  })
}).annotations({ identifier: "Rollback" })

/** Who a caller is, as a version's `created_by`. */
export const authorOf = (caller: Caller): PolicyAuthor =>
  caller.kind === "user"
    ? { kind: "user", id: caller.userId ?? caller.principalId }
    : { kind: "key", id: caller.apiKeyId ?? caller.principalId }

const authorKind = (kind: string): "user" | "key" | "system" => (kind === "user" || kind === "key" ? kind : "system")

export const toPolicyVersion = (row: PolicyVersionRow): typeof PolicyVersion.Type => ({
  version: row.version,
  source_yaml: row.source_yaml,
  enabled: row.enabled,
  created_at: row.created_at.toISOString(),
  created_by: { kind: authorKind(row.created_by_kind), id: row.created_by_id }
})
