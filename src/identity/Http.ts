/** Stub handlers of the identity groups; each answers 501 until implemented. */
import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { GuardrailApi } from "../Api.js"
import { notImplemented } from "../platform/Errors.js"

const stub = (what: string) => () => Effect.fail(notImplemented(what))

export const AuthHttpLive = HttpApiBuilder.group(GuardrailApi, "auth", (handlers) =>
  handlers
    .handle("login", stub("POST /v1/auth/login"))
    .handle("signup", stub("POST /v1/auth/signup"))
    .handle("changePassword", stub("POST /v1/auth/password"))
    .handle("oauthSession", stub("POST /v1/identity/oauth-session"))
)

export const ApiKeysHttpLive = HttpApiBuilder.group(GuardrailApi, "apiKeys", (handlers) =>
  handlers
    .handle("listApiKeys", stub("GET /v1/api-keys"))
    .handle("createApiKey", stub("POST /v1/api-keys"))
    .handle("revokeApiKeys", stub("PATCH /v1/api-keys/batch/revoke"))
)

export const TeamHttpLive = HttpApiBuilder.group(GuardrailApi, "team", (handlers) =>
  handlers
    .handle("listMyWorkspaces", stub("GET /v1/team/my-workspaces"))
    .handle("createWorkspace", stub("POST /v1/team/my-workspaces"))
)

export const SettingsHttpLive = HttpApiBuilder.group(GuardrailApi, "settings", (handlers) =>
  handlers.handle("getSettings", stub("GET /v1/settings")).handle("updateSettings", stub("PATCH /v1/settings"))
)

export const EnvironmentsHttpLive = HttpApiBuilder.group(GuardrailApi, "environments", (handlers) =>
  handlers
    .handle("listEnvironments", stub("GET /v1/environments"))
    .handle("createEnvironment", stub("POST /v1/environments"))
    .handle("updateEnvironment", stub("PATCH /v1/environments/{id}"))
    .handle("deleteEnvironment", stub("DELETE /v1/environments/{id}"))
    .handle("getCheckerModes", stub("GET /v1/environments/{environment_id}/checker-modes"))
    .handle("replaceCheckerModes", stub("PUT /v1/environments/{environment_id}/checker-modes"))
)
