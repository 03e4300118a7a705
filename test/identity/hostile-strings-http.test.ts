/**
 * Strings PostgreSQL cannot store: a NUL character (JSON "\u0000", or %00
 * in a path id) in any field of the identity endpoints. Valid JSON, so the
 * client must get a 4xx with the error body (400 for a body field, 400 or
 * 404 for a path id), never a 500. The fuzz test finds these at random;
 * here each place is pinned down.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import type { EnvironmentId } from "../../src/identity/Domain.js"
import { clientAt, type GuardrailClient } from "../support/Api.js"
import { call, isErrorBody, SNAKE_CASE } from "../support/Raw.js"
import { createEnvironment, INTERNAL_KEY, sha256Hex, tenant } from "../support/Tenants.js"
import { uniqueName } from "../support/TestPlatform.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import { answerOf, describeAnswer } from "./http-helpers.js"

const NUL = "a\u0000b"

interface Case {
  readonly method: string
  /** `{env}` is replaced with an environment of the caller's workspace. */
  readonly path: string
  readonly body?: unknown
  readonly credential: "owner" | "internal" | "none"
  /** Acceptable statuses (all 4xx). */
  readonly statuses: ReadonlyArray<number>
  /** The call through the typed client; none for a NUL in the path, which is sent raw. */
  readonly send?: (api: GuardrailClient, environment: EnvironmentId) => Effect.Effect<unknown, unknown>
}

/** A case sent through the typed client, `body` its payload. */
const typed = <Body>(
  method: string,
  path: string,
  body: Body,
  credential: Case["credential"],
  statuses: ReadonlyArray<number>,
  send: (api: GuardrailClient, environment: EnvironmentId, payload: Body) => Effect.Effect<unknown, unknown>
): Case => ({ method, path, body, credential, statuses, send: (api, environment) => send(api, environment, body) })

const cases: ReadonlyArray<Case> = [
  // Raw: a NUL in a path id (%00), which the client does not send.
  { method: "GET", path: "/v1/environments/%00/checker-modes", credential: "owner", statuses: [400, 404] },
  { method: "PUT", path: "/v1/environments/%00/checker-modes", body: {}, credential: "owner", statuses: [400, 404] },
  { method: "PATCH", path: "/v1/environments/%00", body: {}, credential: "owner", statuses: [400, 404] },
  { method: "DELETE", path: "/v1/environments/%00", credential: "owner", statuses: [400, 404] },
  typed("PATCH", "/v1/environments/{env}", { name: NUL }, "owner", [400], (api, id, payload) =>
    api.environments.updateEnvironment({ path: { id }, payload })
  ),
  typed("PATCH", "/v1/environments/{env}", { description: NUL }, "owner", [400], (api, id, payload) =>
    api.environments.updateEnvironment({ path: { id }, payload })
  ),
  typed("POST", "/v1/environments", { name: NUL, slug: "nul" }, "owner", [400], (api, _, payload) =>
    api.environments.createEnvironment({ payload })
  ),
  typed("POST", "/v1/environments", { name: "n", slug: "nul2", description: NUL }, "owner", [400], (api, _, payload) =>
    api.environments.createEnvironment({ payload })
  ),
  typed("POST", "/v1/api-keys", { name: NUL }, "owner", [400], (api, _, payload) =>
    api.apiKeys.createApiKey({ payload })
  ),
  typed("POST", "/v1/api-keys", { name: "k", environment_id: NUL }, "owner", [400, 404], (api, _, payload) =>
    api.apiKeys.createApiKey({ payload })
  ),
  typed("PATCH", "/v1/api-keys/batch/revoke", { ids: [NUL] }, "owner", [400, 404], (api, _, payload) =>
    api.apiKeys.revokeApiKeys({ payload })
  ),
  typed("POST", "/v1/team/my-workspaces", { name: NUL }, "owner", [400], (api, _, payload) =>
    api.team.createWorkspace({ payload })
  ),
  // The client always sends a role; the server's default is member.
  typed(
    "POST",
    "/v1/team/invites",
    { email: "a\u0000@b.co", role: "member" } as const,
    "owner",
    [400],
    (api, _, payload) => api.team.createInvite({ payload })
  ),
  typed("PATCH", "/v1/settings", { config: { note: NUL } }, "owner", [400], (api, _, payload) =>
    api.settings.updateSettings({ payload })
  ),
  typed("PATCH", "/v1/settings", { config: { [NUL]: 1 } }, "owner", [400], (api, _, payload) =>
    api.settings.updateSettings({ payload })
  ),
  typed(
    "PATCH",
    "/v1/settings",
    { escalation_webhook_url: "https://hooks.example.com/\u0000" },
    "owner",
    [400],
    (api, _, payload) => api.settings.updateSettings({ payload })
  ),
  typed("POST", "/v1/auth/signup", { username: NUL, password: sha256Hex("x") }, "none", [400], (api, _, payload) =>
    api.auth.signup({ payload })
  ),
  typed("POST", "/v1/auth/login", { username: NUL, password: sha256Hex("x") }, "none", [400, 401], (api, _, payload) =>
    api.auth.login({ payload })
  ),
  typed(
    "POST",
    "/v1/auth/password",
    { username: NUL, current_password: sha256Hex("x"), new_password: sha256Hex("y") },
    "none",
    [400, 401],
    (api, _, payload) => api.auth.changePassword({ payload })
  ),
  typed(
    "POST",
    "/v1/identity/oauth-session",
    { email: `${NUL}@example.com`, provider: "google", provider_subject: "s" },
    "internal",
    [400],
    (api, _, payload) => api.auth.oauthSession({ payload })
  ),
  typed(
    "POST",
    "/v1/identity/oauth-session",
    { email: "nul@example.com", provider: NUL, provider_subject: "s" },
    "internal",
    [400],
    (api, _, payload) => api.auth.oauthSession({ payload })
  ),
  typed(
    "POST",
    "/v1/identity/oauth-session",
    { email: "nul@example.com", provider: "google", provider_subject: NUL },
    "internal",
    [400],
    (api, _, payload) => api.auth.oauthSession({ payload })
  )
]

layer(testServer("database", { INTERNAL_API_KEY: INTERNAL_KEY }), SERVER_OPTIONS)("NUL characters", (it) => {
  for (const c of cases) {
    it.effect(`${c.method} ${c.path} ${JSON.stringify(c.body ?? "")}: ${c.statuses.join(" or ")}, not 500`, () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base, uniqueName("nul"))
        const environment = yield* createEnvironment(owner)
        const token = c.credential === "owner" ? owner.jwt : c.credential === "internal" ? INTERNAL_KEY : undefined
        if (c.send === undefined) {
          const response = yield* call(base, c.method, c.path.replace("{env}", environment.id), { token, body: c.body })
          expect(c.statuses, response.text).toContain(response.status)
          expect(isErrorBody(response.body), response.text).toBe(true)
        } else {
          const answer = yield* answerOf(c.send(yield* clientAt(base, { token }), environment.id), 200)
          expect(answer.error, `a success: ${JSON.stringify(answer.value)}`).toBeDefined()
          expect(c.statuses, describeAnswer(answer)).toContain(answer.status)
          // The error body: a snake_case code and a message.
          expect(answer.error?.code, describeAnswer(answer)).toMatch(SNAKE_CASE)
          expect(answer.error?.message, describeAnswer(answer)).not.toBe("")
        }
        // The owner's workspace is intact afterwards.
        yield* owner.api.settings.getSettings({})
      })
    )
  }
})
