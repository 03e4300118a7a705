/** Handlers of the identity groups: auth, API keys, team, settings and environments. */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import { Effect, Layer, Option } from "effect"
import { GuardrailApi } from "../Api.js"
import { auditedWrites } from "../audit/Chain.js"
import { Unauthorized } from "../http/Errors.js"
import { webhookUrlFor } from "./Access.js"
import { Accounts } from "./Accounts.js"
import { ApiKeys } from "./ApiKeys.js"
import { CurrentCaller, inWorkspace } from "./Authentication.js"
import { AuthenticationLive, InternalAuthenticationLive } from "./AuthenticationLive.js"
import { Credentials, missingCredential } from "./Credentials.js"
import { EnvironmentId, WorkspaceId } from "./Domain.js"
import { WorkspaceFeatures } from "./FeatureFlags.js"
import { WorkspaceSettings } from "./WorkspaceSettings.js"
import { Workspaces } from "./Workspaces.js"

const clientAddress = Effect.map(HttpServerRequest.HttpServerRequest, (request) =>
  Option.getOrElse(request.remoteAddress, () => "unknown")
)

const bearerToken = (authorization: string | undefined) =>
  authorization?.toLowerCase().startsWith("bearer ") ? authorization.slice(7).trim() : ""

export const AuthHttpLive = HttpApiBuilder.group(GuardrailApi, "auth", (handlers) =>
  Effect.gen(function* () {
    const accounts = yield* Accounts
    const credentials = yield* Credentials
    return handlers
      .handle("signup", ({ payload }) => Effect.flatMap(clientAddress, (address) => accounts.signup(payload, address)))
      .handle("login", ({ payload }) => Effect.flatMap(clientAddress, (address) => accounts.login(payload, address)))
      .handle("changePassword", ({ payload }) =>
        Effect.flatMap(clientAddress, (address) => accounts.changePassword(payload, address))
      )
      .handle("oauthSession", ({ payload }) => accounts.oauthSession(payload))
      .handle("logout", () =>
        Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
          const token = bearerToken(request.headers["authorization"])
          return token === "" ? Effect.fail(missingCredential) : credentials.endSession(token)
        })
      )
  })
)

export const MeHttpLive = HttpApiBuilder.group(GuardrailApi, "me", (handlers) =>
  Effect.gen(function* () {
    const features = yield* WorkspaceFeatures
    return handlers.handle("getMe", () =>
      Effect.gen(function* () {
        const caller = yield* CurrentCaller
        const flags = yield* features.flagsOf(caller.workspaceId)
        return {
          kind: caller.kind,
          principal_id: caller.principalId,
          user_id: caller.userId,
          api_key_id: caller.apiKeyId,
          workspace_id: WorkspaceId.make(caller.workspaceId),
          environment_id: caller.environmentId === null ? null : EnvironmentId.make(caller.environmentId),
          role: caller.role,
          feature_flags: {
            is_attacks_enabled: flags.is_attacks_enabled,
            is_knowledge_base_enabled: flags.is_knowledge_base_enabled,
            is_mcp_gateway_enabled: flags.is_mcp_gateway_enabled
          }
        }
      })
    )
  })
)

export const ApiKeysHttpLive = HttpApiBuilder.group(GuardrailApi, "apiKeys", (handlers) =>
  Effect.gen(function* () {
    const apiKeys = yield* ApiKeys
    const audited = yield* auditedWrites
    return handlers
      .handle("listApiKeys", () =>
        Effect.map(CurrentCaller, (caller) => caller.workspaceId).pipe(
          Effect.flatMap(apiKeys.list),
          Effect.map((api_keys) => ({ api_keys }))
        )
      )
      .handle("createApiKey", ({ payload }) =>
        audited(Effect.flatMap(CurrentCaller, (caller) => apiKeys.create(caller, payload)))
      )
      .handle("revokeApiKeys", ({ payload }) =>
        Effect.flatMap(CurrentCaller, (caller) => apiKeys.revoke(caller.workspaceId, payload.ids)).pipe(
          Effect.map((api_keys) => ({ api_keys }))
        )
      )
  })
)

export const TeamHttpLive = HttpApiBuilder.group(GuardrailApi, "team", (handlers) =>
  Effect.gen(function* () {
    const workspaces = yield* Workspaces
    const audited = yield* auditedWrites
    const credentials = yield* Credentials
    return handlers
      .handle("listMyWorkspaces", ({ headers }) =>
        Effect.gen(function* () {
          const request = yield* HttpServerRequest.HttpServerRequest
          const token = bearerToken(request.headers["authorization"])
          const userId = headers["x-service-user-id"].toLowerCase()
          const email = headers["x-service-user-email"]?.trim().toLowerCase() || undefined
          if (credentials.isInternalKey(token)) return yield* workspaces.listMine(userId, email, "vouched")
          if (token === "") return yield* missingCredential
          const user = yield* credentials.sessionUser(token)
          if (user.id !== userId) {
            return yield* new Unauthorized({
              code: "user_mismatch",
              message: "X-SERVICE-User-Id must be the user of the session."
            })
          }
          // The trusted web client (internal key) vouches for the email; a session's header is only a claim.
          return yield* workspaces.listMine(userId, email, "claimed")
        })
      )
      .handle("createWorkspace", ({ payload }) =>
        audited(
          Effect.flatMap(CurrentCaller, (caller) =>
            workspaces.create(caller.userId ?? caller.principalId, payload.name)
          )
        )
      )
      .handle("createInvite", ({ payload }) =>
        audited(Effect.flatMap(CurrentCaller, (caller) => workspaces.invite(caller, payload)))
      )
      .handle("listMembers", ({ urlParams }) =>
        Effect.flatMap(CurrentCaller, (caller) => workspaces.members(caller.workspaceId, urlParams))
      )
  })
)

export const SettingsHttpLive = HttpApiBuilder.group(GuardrailApi, "settings", (handlers) =>
  Effect.gen(function* () {
    const settings = yield* WorkspaceSettings
    return (
      handlers
        .handle("getSettings", () =>
          Effect.flatMap(CurrentCaller, (caller) =>
            Effect.map(settings.settingsOf(caller.workspaceId), (current) => ({
              ...current,
              escalation_webhook_url: webhookUrlFor(caller, current.escalation_webhook_url)
            }))
          )
        )
        // Audited by the service, in a transaction opened once the webhook URL is checked.
        .handle("updateSettings", ({ payload }) =>
          Effect.flatMap(CurrentCaller, (caller) => settings.updateSettings(caller.workspaceId, payload))
        )
    )
  })
)

export const EnvironmentsHttpLive = HttpApiBuilder.group(GuardrailApi, "environments", (handlers) =>
  Effect.gen(function* () {
    const settings = yield* WorkspaceSettings
    // Writes are audited by the service, which drops the cached runtime config once they have committed.
    return handlers
      .handle("listEnvironments", () =>
        inWorkspace(settings.listEnvironments).pipe(Effect.map((environments) => ({ environments })))
      )
      .handle("createEnvironment", ({ payload }) => inWorkspace((ws) => settings.createEnvironment(ws, payload)))
      .handle("updateEnvironment", ({ path, payload }) =>
        inWorkspace((ws) => settings.updateEnvironment(ws, path.id, payload))
      )
      .handle("deleteEnvironment", ({ path }) => inWorkspace((ws) => settings.deleteEnvironment(ws, path.id)))
      .handle("getCheckerModes", ({ path }) => inWorkspace((ws) => settings.checkerModes(ws, path.environment_id)))
      .handle("replaceCheckerModes", ({ path, payload }) =>
        inWorkspace((ws) =>
          settings.replaceCheckerModes(ws, path.environment_id, {
            approval: payload.approval_checker_mode ?? null,
            flow: payload.flow_checker_mode ?? null,
            memory: payload.memory_checker_mode ?? null,
            param: payload.param_checker_mode ?? null
          })
        )
      )
  })
)

/** The identity services every handler layer above needs, with the credential middlewares. */
export const IdentityLive = Layer.mergeAll(
  AuthenticationLive,
  InternalAuthenticationLive,
  Accounts.Default,
  ApiKeys.Default,
  Credentials.Default,
  Workspaces.Default,
  WorkspaceSettings.Default,
  WorkspaceFeatures.Default
)
