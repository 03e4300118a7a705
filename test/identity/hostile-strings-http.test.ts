/**
 * Strings PostgreSQL cannot store: a NUL character (JSON "\u0000", or %00
 * in a path id) in any field of the identity endpoints. Valid JSON, so the
 * client must get a 4xx with the error body (400 for a body field, 400 or
 * 404 for a path id), never a 500. The fuzz test finds these at random;
 * here each place is pinned down.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { uniqueName } from "../support/TestPlatform.js"
import { baseUrl, testServer } from "../support/TestServer.js"
import {
  call,
  createEnvironment,
  INTERNAL_KEY,
  isErrorBody,
  SERVER_OPTIONS,
  sha256Hex,
  tenant
} from "./http-helpers.js"

const NUL = "a\u0000b"

interface Case {
  readonly method: string
  /** `{env}` is replaced with an environment of the caller's workspace. */
  readonly path: string
  readonly body?: unknown
  readonly credential: "owner" | "internal" | "none"
  /** Acceptable statuses (all 4xx). */
  readonly statuses: ReadonlyArray<number>
}

const cases: ReadonlyArray<Case> = [
  { method: "GET", path: "/v1/environments/%00/checker-modes", credential: "owner", statuses: [400, 404] },
  { method: "PUT", path: "/v1/environments/%00/checker-modes", body: {}, credential: "owner", statuses: [400, 404] },
  { method: "PATCH", path: "/v1/environments/%00", body: {}, credential: "owner", statuses: [400, 404] },
  { method: "DELETE", path: "/v1/environments/%00", credential: "owner", statuses: [400, 404] },
  { method: "PATCH", path: "/v1/environments/{env}", body: { name: NUL }, credential: "owner", statuses: [400] },
  { method: "PATCH", path: "/v1/environments/{env}", body: { description: NUL }, credential: "owner", statuses: [400] },
  { method: "POST", path: "/v1/environments", body: { name: NUL, slug: "nul" }, credential: "owner", statuses: [400] },
  {
    method: "POST",
    path: "/v1/environments",
    body: { name: "n", slug: "nul2", description: NUL },
    credential: "owner",
    statuses: [400]
  },
  { method: "POST", path: "/v1/api-keys", body: { name: NUL }, credential: "owner", statuses: [400] },
  {
    method: "POST",
    path: "/v1/api-keys",
    body: { name: "k", environment_id: NUL },
    credential: "owner",
    statuses: [400, 404]
  },
  {
    method: "PATCH",
    path: "/v1/api-keys/batch/revoke",
    body: { ids: [NUL] },
    credential: "owner",
    statuses: [400, 404]
  },
  { method: "POST", path: "/v1/team/my-workspaces", body: { name: NUL }, credential: "owner", statuses: [400] },
  { method: "POST", path: "/v1/team/invites", body: { email: "a\u0000@b.co" }, credential: "owner", statuses: [400] },
  { method: "PATCH", path: "/v1/settings", body: { config: { note: NUL } }, credential: "owner", statuses: [400] },
  { method: "PATCH", path: "/v1/settings", body: { config: { [NUL]: 1 } }, credential: "owner", statuses: [400] },
  {
    method: "PATCH",
    path: "/v1/settings",
    body: { escalation_webhook_url: "https://hooks.example.com/\u0000" },
    credential: "owner",
    statuses: [400]
  },
  {
    method: "POST",
    path: "/v1/auth/signup",
    body: { username: NUL, password: sha256Hex("x") },
    credential: "none",
    statuses: [400]
  },
  {
    method: "POST",
    path: "/v1/auth/login",
    body: { username: NUL, password: sha256Hex("x") },
    credential: "none",
    statuses: [400, 401]
  },
  {
    method: "POST",
    path: "/v1/auth/password",
    body: { username: NUL, current_password: sha256Hex("x"), new_password: sha256Hex("y") },
    credential: "none",
    statuses: [400, 401]
  },
  {
    method: "POST",
    path: "/v1/identity/oauth-session",
    body: { email: `${NUL}@example.com`, provider: "google", provider_subject: "s" },
    credential: "internal",
    statuses: [400]
  },
  {
    method: "POST",
    path: "/v1/identity/oauth-session",
    body: { email: "nul@example.com", provider: NUL, provider_subject: "s" },
    credential: "internal",
    statuses: [400]
  },
  {
    method: "POST",
    path: "/v1/identity/oauth-session",
    body: { email: "nul@example.com", provider: "google", provider_subject: NUL },
    credential: "internal",
    statuses: [400]
  }
]

layer(testServer("database", { INTERNAL_API_KEY: INTERNAL_KEY }), SERVER_OPTIONS)("NUL characters", (it) => {
  for (const c of cases) {
    it.effect(`${c.method} ${c.path} ${JSON.stringify(c.body ?? "")}: ${c.statuses.join(" or ")}, not 500`, () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base, uniqueName("nul"))
        const environment = yield* createEnvironment(base, owner)
        const token = c.credential === "owner" ? owner.jwt : c.credential === "internal" ? INTERNAL_KEY : undefined
        const response = yield* call(base, c.method, c.path.replace("{env}", environment.id), { token, body: c.body })
        expect(c.statuses, response.text).toContain(response.status)
        expect(isErrorBody(response.body), response.text).toBe(true)
        // The owner's workspace is intact afterwards.
        const settings = yield* call(base, "GET", "/v1/settings", { token: owner.jwt })
        expect(settings.status, settings.text).toBe(200)
      })
    )
  }
})
