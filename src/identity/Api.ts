/** The identity contract: auth, API keys, team workspaces, workspace settings and environments. */
import { Authentication, InternalAuthentication } from "./Authentication.js"
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as OpenApi from "@effect/platform/OpenApi"
import { Schema } from "effect"
import {
  ApiKey,
  ChangePassword,
  CheckerModeOverrides,
  CreateApiKey,
  CreatedApiKey,
  CreateEnvironment,
  CreateInvite,
  CreateWorkspace,
  Invite,
  MAX_MEMBERS_PAGE,
  Me,
  TeamMembers,
  TeamMembersQuery,
  Credentials,
  Environment,
  EnvironmentCheckerModes,
  EnvironmentId,
  MyWorkspacesHeaders,
  OAuthSessionRequest,
  RevokeApiKeys,
  Session,
  Settings,
  UpdateEnvironment,
  UpdateSettings,
  WorkspaceMembership
} from "./Domain.js"

// Auth endpoints answer 200 (not 201) even when signup creates a user: the spec says so.
export class AuthApi extends HttpApiGroup.make("auth")
  .add(HttpApiEndpoint.post("login", "/auth/login").setPayload(Credentials).addSuccess(Session))
  .add(HttpApiEndpoint.post("signup", "/auth/signup").setPayload(Credentials).addSuccess(Session))
  .add(HttpApiEndpoint.post("changePassword", "/auth/password").setPayload(ChangePassword).addSuccess(Session))
  .add(
    HttpApiEndpoint.post("logout", "/auth/logout")
      .addSuccess(HttpApiSchema.NoContent)
      .annotate(
        OpenApi.Description,
        "Extension: signs out the session of the bearer JWT; from then on that JWT answers 401 session_ended (the user's other sessions go on)."
      )
  )
  .add(
    HttpApiEndpoint.post("oauthSession", "/identity/oauth-session")
      .setPayload(OAuthSessionRequest)
      .addSuccess(Session)
      .middleware(InternalAuthentication)
  )
  .prefix("/v1")
  .annotate(
    OpenApi.Description,
    "Sessions: login, signup and password change take the SHA-256 hex digest of the password; oauth-session is internal (internal key only)."
  ) {}

export class MeApi extends HttpApiGroup.make("me")
  .add(
    HttpApiEndpoint.get("getMe", "/me")
      .addSuccess(Me)
      .annotate(OpenApi.Summary, "Who am I")
      .annotate(
        OpenApi.Description,
        "Extension: the caller's identity, credential kind, workspace id, environment id (runtime keys), role and the workspace's feature flags. Use it to find the workspace_id events need."
      )
  )
  .prefix("/v1")
  .middleware(Authentication)
  .annotate(OpenApi.Description, "The caller as the service sees it.") {}

export class ApiKeysApi extends HttpApiGroup.make("apiKeys")
  .add(HttpApiEndpoint.get("listApiKeys", "/api-keys").addSuccess(Schema.Struct({ api_keys: Schema.Array(ApiKey) })))
  .add(
    HttpApiEndpoint.post("createApiKey", "/api-keys")
      .setPayload(CreateApiKey)
      .addSuccess(CreatedApiKey, { status: 201 })
  )
  .add(
    HttpApiEndpoint.patch("revokeApiKeys", "/api-keys/batch/revoke")
      .setPayload(RevokeApiKeys)
      .addSuccess(Schema.Struct({ api_keys: Schema.Array(ApiKey) }))
  )
  .prefix("/v1")
  .middleware(Authentication)
  .annotate(
    OpenApi.Description,
    "Workspace runtime keys: the plaintext is returned once at creation; listings carry only the prefix."
  ) {}

// GET my-workspaces authenticates in its handler: a session whose `sub` is X-SERVICE-User-Id, or the internal key.
export class TeamApi extends HttpApiGroup.make("team")
  .add(
    HttpApiEndpoint.post("createWorkspace", "/team/my-workspaces")
      .setPayload(CreateWorkspace)
      .addSuccess(WorkspaceMembership, { status: 201 })
  )
  .add(
    HttpApiEndpoint.post("createInvite", "/team/invites")
      .setPayload(CreateInvite)
      .addSuccess(Invite, { status: 201 })
      .annotate(
        OpenApi.Description,
        "Extension: invite an email address to this workspace with a role. The invite expires INVITE_TTL_HOURS " +
          "after it is sent (`expires_at`); past MAX_PENDING_INVITES_PER_WORKSPACE pending ones, 409 " +
          "invite_limit_reached (inviting an address again replaces its pending invite, so it never is)."
      )
  )
  .add(
    HttpApiEndpoint.get("listMembers", "/team/members")
      .setUrlParams(TeamMembersQuery)
      .addSuccess(TeamMembers)
      .annotate(
        OpenApi.Description,
        `Extension: the workspace's members, newest first, ${MAX_MEMBERS_PAGE} a page at most (default 50; ` +
          "next_cursor pages further), and on every page its pending invites that have not expired " +
          "(at most MAX_PENDING_INVITES_PER_WORKSPACE; an invite expires INVITE_TTL_HOURS after it was sent)."
      )
  )
  .middlewareEndpoints(Authentication)
  .add(
    HttpApiEndpoint.get("listMyWorkspaces", "/team/my-workspaces")
      .setHeaders(MyWorkspacesHeaders)
      .addSuccess(Schema.Struct({ is_platform_admin: Schema.Boolean, workspaces: Schema.Array(WorkspaceMembership) }))
  )
  .prefix("/v1")
  .annotate(
    OpenApi.Description,
    "The caller's workspaces; listing first accepts pending invites addressed to X-SERVICE-User-Email " +
      "when the internal key calls or an OAuth provider verified that email for the session's user (else none)."
  ) {}

export class SettingsApi extends HttpApiGroup.make("settings")
  .add(HttpApiEndpoint.get("getSettings", "/settings").addSuccess(Settings))
  .add(HttpApiEndpoint.patch("updateSettings", "/settings").setPayload(UpdateSettings).addSuccess(Settings))
  .prefix("/v1")
  .middleware(Authentication)
  .annotate(
    OpenApi.Description,
    "Workspace runtime settings; PATCH leaves absent fields unchanged and accepts an empty object."
  ) {}

const EnvironmentPath = Schema.Struct({ id: EnvironmentId })
const CheckerModesPath = Schema.Struct({ environment_id: EnvironmentId })

export class EnvironmentsApi extends HttpApiGroup.make("environments")
  .add(
    HttpApiEndpoint.get("listEnvironments", "/environments").addSuccess(
      Schema.Struct({ environments: Schema.Array(Environment) })
    )
  )
  .add(
    HttpApiEndpoint.post("createEnvironment", "/environments")
      .setPayload(CreateEnvironment)
      .addSuccess(Environment, { status: 201 })
  )
  .add(
    HttpApiEndpoint.patch("updateEnvironment", "/environments/:id")
      .setPath(EnvironmentPath)
      .setPayload(UpdateEnvironment)
      .addSuccess(Environment)
  )
  .add(
    HttpApiEndpoint.del("deleteEnvironment", "/environments/:id")
      .setPath(EnvironmentPath)
      .addSuccess(HttpApiSchema.NoContent)
  )
  .add(
    HttpApiEndpoint.get("getCheckerModes", "/environments/:environment_id/checker-modes")
      .setPath(CheckerModesPath)
      .addSuccess(EnvironmentCheckerModes)
  )
  .add(
    HttpApiEndpoint.put("replaceCheckerModes", "/environments/:environment_id/checker-modes")
      .setPath(CheckerModesPath)
      .setPayload(CheckerModeOverrides)
      .addSuccess(EnvironmentCheckerModes)
  )
  .prefix("/v1")
  .middleware(Authentication)
  .annotate(
    OpenApi.Description,
    "Environments of a workspace, each with optional checker-mode overrides (null inherits the workspace mode)."
  ) {}
