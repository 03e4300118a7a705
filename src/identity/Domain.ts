/** Users, sessions, API keys, workspaces, settings and environments: the schemas of their contract. */
import { Schema } from "effect"
import {
  boundedArray,
  BoundedJson,
  boundedString,
  CursorParam,
  Description,
  Email,
  Identifier,
  JsonValue,
  LimitParam,
  NonEmptyName,
  Timestamp,
  Url,
  withinJsonLimits
} from "../platform/Schemas.js"

export const UserId = Schema.UUID.pipe(Schema.brand("UserId")).annotations({ identifier: "UserId" })
export type UserId = typeof UserId.Type
export const WorkspaceId = Identifier.pipe(Schema.brand("WorkspaceId")).annotations({ identifier: "WorkspaceId" })
export type WorkspaceId = typeof WorkspaceId.Type
export const ApiKeyId = Identifier.pipe(Schema.brand("ApiKeyId")).annotations({ identifier: "ApiKeyId" })
export type ApiKeyId = typeof ApiKeyId.Type
export const EnvironmentId = Identifier.pipe(Schema.brand("EnvironmentId")).annotations({
  identifier: "EnvironmentId"
})
export type EnvironmentId = typeof EnvironmentId.Type

// ---- auth

/**
 * Clients send the SHA-256 hex digest of the password, never the plaintext; anything else is 400. The 400 does not
 * quote what was sent: a client that sent the plaintext by mistake must not find it in answers (or their logs).
 */
export const PasswordDigest = Schema.String.annotations({
  message: () => "expected the SHA-256 hex digest of the password (64 hex characters)"
})
  .pipe(
    Schema.pattern(/^[0-9a-fA-F]{64}$/, {
      message: () => "expected the SHA-256 hex digest of the password (64 hex characters), not the password"
    })
  )
  .annotations({
    identifier: "PasswordDigest",
    description: "SHA-256 hex digest of the plaintext password (64 hex characters)"
  })

/** Trimmed text, bounded before trimming too (so the OpenAPI document shows the limit). */
const trimmed = (max: number) => Schema.compose(boundedString(max), Schema.Trim)

const Username = trimmed(128).pipe(
  Schema.minLength(1, { message: () => "expected a username" }),
  Schema.maxLength(128, { message: () => "expected at most 128 characters" })
)

export const Credentials = Schema.Struct({
  username: Username,
  password: PasswordDigest
})

export const ChangePassword = Schema.Struct({
  username: Username,
  current_password: PasswordDigest,
  new_password: PasswordDigest
})

const NonBlank = trimmed(256).pipe(
  Schema.minLength(1, { message: () => "expected a non-blank value" }),
  Schema.maxLength(256)
)

export const OAuthSessionRequest = Schema.Struct({
  email: trimmed(320).pipe(Schema.pattern(/^[^\s@]+@[^\s@]+$/, { message: () => "expected an email address" })),
  provider: NonBlank,
  provider_subject: NonBlank
})

export class Session extends Schema.Class<Session>("Session")({
  jwt: Schema.String,
  user_id: UserId,
  username: Schema.String,
  workspace_id: Schema.NullOr(WorkspaceId).annotations({
    description:
      "Extension: the user's default workspace, which the session acts in unless X-SERVICE-Workspace-Id names another"
  })
}) {}

// ---- API keys

export const ApiKeyStatus = Schema.Literal("active", "revoked")

export class ApiKey extends Schema.Class<ApiKey>("ApiKey")({
  id: ApiKeyId,
  name: Schema.String,
  prefix: Schema.String.annotations({ description: "The first characters of the key; the plaintext is never listed" }),
  status: ApiKeyStatus,
  environment: Schema.String,
  environment_id: Schema.String,
  principal_id: Schema.String,
  created_by: Schema.String,
  created_at: Timestamp,
  last_used_at: Schema.NullOr(Timestamp)
}) {}

export const CreateApiKey = Schema.Struct({
  name: NonEmptyName,
  /** Defaults to the workspace's default environment. */
  environment_id: Schema.optional(Identifier)
})

export const CreatedApiKey = Schema.Struct({
  api_key: ApiKey,
  workspace_id: WorkspaceId.annotations({ description: "Extension: the workspace the key acts in" }),
  plaintext_key: Schema.String.annotations({ description: "The full secret (gr_live_...), shown only once" })
})

/** `GET /v1/me`: who the credential is, where it acts, and what it may use. */
export const Me = Schema.Struct({
  kind: Schema.Literal("user", "runtime_key").annotations({
    description: "The credential: a user session or a runtime key"
  }),
  principal_id: Schema.String.annotations({ description: "The user id, or the API key id" }),
  user_id: Schema.NullOr(Schema.String),
  api_key_id: Schema.NullOr(Schema.String),
  workspace_id: WorkspaceId,
  environment_id: Schema.NullOr(EnvironmentId).annotations({
    description: "The environment a runtime key is bound to"
  }),
  role: Schema.Literal("owner", "admin", "member"),
  feature_flags: Schema.Struct({
    is_attacks_enabled: Schema.Boolean,
    is_knowledge_base_enabled: Schema.Boolean,
    is_mcp_gateway_enabled: Schema.Boolean
  })
}).annotations({ identifier: "Me" })

export const RevokeApiKeys = Schema.Struct({ ids: boundedArray(Identifier, 1000) })

// ---- team

export const WorkspaceRole = Schema.Literal("owner", "admin", "member")

export class WorkspaceMembership extends Schema.Class<WorkspaceMembership>("WorkspaceMembership")({
  id: WorkspaceId,
  name: Schema.String,
  slug: Schema.String,
  organization_id: Schema.String,
  role: WorkspaceRole,
  is_attacks_enabled: Schema.Boolean,
  is_knowledge_base_enabled: Schema.Boolean,
  is_mcp_gateway_enabled: Schema.Boolean
}) {}

/** Header names are lowercase because Node lowercases incoming headers. */
export const MyWorkspacesHeaders = Schema.Struct({
  "x-service-user-id": Schema.UUID,
  "x-service-user-email": Schema.optional(Email)
})

export const CreateWorkspace = Schema.Struct({ name: trimmed(200).pipe(Schema.minLength(1), Schema.maxLength(200)) })

export const CreateInvite = Schema.Struct({
  email: trimmed(320).pipe(Schema.pattern(/^[^\s@]+@[^\s@]+$/, { message: () => "expected an email address" })),
  role: Schema.optionalWith(WorkspaceRole, { default: () => "member" as const })
})

export class Invite extends Schema.Class<Invite>("Invite")({
  id: Schema.String,
  workspace_id: Schema.String,
  email: Schema.String,
  role: WorkspaceRole,
  status: Schema.Literal("pending", "accepted"),
  created_at: Timestamp,
  /** Extension: `created_at` plus INVITE_TTL_HOURS; from then on the invite is neither accepted nor listed. */
  expires_at: Timestamp
}) {}

/** The most members one page of `GET /v1/team/members` holds. */
export const MAX_MEMBERS_PAGE = 100

/** Extension: `GET /v1/team/members` pages its members (API-CONVENTIONS list paging). */
export const TeamMembersQuery = Schema.Struct({
  limit: Schema.optional(LimitParam()),
  cursor: Schema.optional(CursorParam)
})

export const TeamMembers = Schema.Struct({
  members: Schema.Array(
    Schema.Struct({ user_id: Schema.String, username: Schema.String, role: WorkspaceRole, joined_at: Timestamp })
  ),
  /** The pending, unexpired invites, all of them on every page (at most MAX_PENDING_INVITES_PER_WORKSPACE). */
  invites: Schema.Array(Invite),
  /** Extension: present when more members follow; send it back as `cursor`. */
  next_cursor: Schema.optional(Schema.String)
})

// ---- settings

export const CheckerMode = Schema.Literal("off", "observe", "enforce")
export const DataHandlingMode = Schema.Literal("raw_allowed", "redacted", "metadata_only")
/** The effect applied when no policy decides; `rewrite` needs a matching policy so it is not offered. */
export const DefaultAction = Schema.Literal("permit", "deny", "defer")

/** The largest LLM budget, in cents ($1 billion): its cap in USD nanos stays well inside a 64-bit integer. */
export const MAX_BUDGET_MINOR = 100_000_000_000

export const LlmBudget = Schema.Struct({
  cap_minor: Schema.Int.pipe(Schema.between(0, MAX_BUDGET_MINOR)),
  currency: Schema.Literal("usd"),
  window: Schema.Literal("day", "month")
}).annotations({ identifier: "LlmBudget" })

/** Free-form workspace config; the budget keys are typed, any other key is kept as sent. */
export const SettingsConfig = Schema.Struct(
  {
    llm_budget: Schema.optional(LlmBudget),
    action_budget: Schema.optional(Schema.Struct({ cap: Schema.Int.pipe(Schema.nonNegative()) }))
  },
  Schema.Record({ key: Schema.String, value: JsonValue })
).annotations({ identifier: "SettingsConfig" })

export class Settings extends Schema.Class<Settings>("Settings")({
  approval_checker_mode: CheckerMode,
  flow_checker_mode: CheckerMode,
  memory_checker_mode: CheckerMode,
  param_checker_mode: CheckerMode,
  data_handling_mode: DataHandlingMode,
  default_action: DefaultAction,
  escalation_webhook_url: Schema.NullOr(Schema.String).annotations({
    description: "Whole for admins and owners; masked (`https://host/***`) for members"
  }),
  retention_days: Schema.String,
  telemetry_enabled: Schema.Boolean,
  require_impact_before_enable: Schema.Boolean.annotations({
    description:
      "Extension: enabling a policy needs a completed impact replay of its document (last 24 h), else 409 impact_required"
  }),
  config: SettingsConfig,
  updated_at: Timestamp
}) {}

export const UpdateSettings = Schema.Struct({
  approval_checker_mode: Schema.optional(CheckerMode),
  flow_checker_mode: Schema.optional(CheckerMode),
  memory_checker_mode: Schema.optional(CheckerMode),
  param_checker_mode: Schema.optional(CheckerMode),
  data_handling_mode: Schema.optional(DataHandlingMode),
  default_action: Schema.optional(DefaultAction),
  escalation_webhook_url: Schema.optional(Schema.NullOr(Url)),
  retention_days: Schema.optional(
    Schema.String.pipe(
      Schema.pattern(/^[1-9][0-9]{0,4}$/, { message: () => "expected a positive whole number of days, as a string" })
    )
  ),
  telemetry_enabled: Schema.optional(Schema.Boolean),
  require_impact_before_enable: Schema.optional(Schema.Boolean),
  /** Merged into the stored config key by key; a null value removes that key. */
  config: Schema.optional(
    withinJsonLimits(
      Schema.Struct(
        {
          llm_budget: Schema.optional(Schema.NullOr(LlmBudget)),
          action_budget: Schema.optional(Schema.NullOr(Schema.Struct({ cap: Schema.Int.pipe(Schema.nonNegative()) })))
        },
        Schema.Record({ key: Schema.String, value: BoundedJson })
      )
    )
  )
})

// ---- environments

export class Environment extends Schema.Class<Environment>("Environment")({
  id: EnvironmentId,
  name: Schema.String,
  slug: Schema.String,
  description: Schema.NullOr(Schema.String),
  is_default: Schema.Boolean,
  created_at: Timestamp,
  updated_at: Timestamp
}) {}

export const EnvironmentSlug = Schema.String.pipe(
  Schema.pattern(/^[a-z0-9-]{1,63}$/, { message: () => "expected 1 to 63 lowercase letters, digits or dashes" })
).annotations({ description: "1 to 63 lowercase letters, digits or dashes; unique within the workspace" })

export const CreateEnvironment = Schema.Struct({
  name: NonEmptyName,
  slug: EnvironmentSlug,
  description: Schema.optional(Schema.NullOr(Description))
})

export const UpdateEnvironment = Schema.Struct({
  name: Schema.optional(NonEmptyName),
  description: Schema.optional(Schema.NullOr(Description))
})

/** A null or omitted mode inherits the workspace-level mode. */
const modeOverride = Schema.optional(Schema.NullOr(CheckerMode))

/** The PUT body; `updated_at` is stamped by the server, so sending it is a 400. */
export const CheckerModeOverrides = Schema.Struct({
  approval_checker_mode: modeOverride,
  flow_checker_mode: modeOverride,
  memory_checker_mode: modeOverride,
  param_checker_mode: modeOverride,
  updated_at: Schema.optional(
    Schema.Never.annotations({ message: () => "updated_at is set by the server; leave it out" })
  )
})

export class EnvironmentCheckerModes extends Schema.Class<EnvironmentCheckerModes>("EnvironmentCheckerModes")({
  approval_checker_mode: Schema.NullOr(CheckerMode),
  flow_checker_mode: Schema.NullOr(CheckerMode),
  memory_checker_mode: Schema.NullOr(CheckerMode),
  param_checker_mode: Schema.NullOr(CheckerMode),
  updated_at: Schema.NullOr(Timestamp)
}) {}
