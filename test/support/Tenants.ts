/**
 * Shared tenant fixtures over the typed client: users signed up over the API
 * with their personal workspace, runtime keys, members of another's
 * workspace, environments and OAuth sessions.
 */
import { expect } from "@effect/vitest"
import { Effect } from "effect"
import { createHash } from "node:crypto"
import { type Caller, clientAt, type GuardrailClient } from "./Api.js"
import { uniqueName } from "./TestPlatform.js"

/** The internal key every test server is configured with (INTERNAL_API_KEY). */
export const INTERNAL_KEY = "internal-test-key-0123456789abcdef0123456789abcdef"

export const sha256Hex = (plaintext: string) => createHash("sha256").update(plaintext).digest("hex")

export interface User {
  readonly jwt: string
  readonly user_id: string
  readonly username: string
  /** The password digest the user signed up with. */
  readonly password: string
  /** The client signed in as this user. */
  readonly api: GuardrailClient
}

/** Signs up a fresh user (with its personal workspace) and answers its session. */
export const signUp = (base: string, username = uniqueName("user")) =>
  Effect.gen(function* () {
    const password = sha256Hex(`${username} secret`)
    const anonymous = yield* clientAt(base)
    const session = yield* anonymous.auth.signup({ payload: { username, password } })
    const api = yield* clientAt(base, { token: session.jwt })
    return { jwt: session.jwt, user_id: session.user_id, username: session.username, password, api } satisfies User
  })

export interface Tenant extends User {
  readonly workspaceId: string
  readonly organizationId: string
  readonly defaultEnvironmentId: string
}

/** A signed-up user with the ids of its personal workspace and default environment. */
export const tenant = (base: string, username = uniqueName("tenant")) =>
  Effect.gen(function* () {
    const user = yield* signUp(base, username)
    const { workspaces } = yield* user.api.team.listMyWorkspaces({ headers: { "x-service-user-id": user.user_id } })
    expect(workspaces).toHaveLength(1)
    const { environments } = yield* user.api.environments.listEnvironments({})
    const defaultEnvironment = environments.find((environment) => environment.is_default)
    expect(defaultEnvironment).toBeDefined()
    return {
      ...user,
      workspaceId: workspaces[0]!.id,
      organizationId: workspaces[0]!.organization_id,
      defaultEnvironmentId: defaultEnvironment!.id
    } satisfies Tenant
  })

/** A runtime key created by `owner` (optionally bound to `environment_id`); answers the create response. */
export const createKey = (owner: Caller, body: { readonly name?: string; readonly environment_id?: string } = {}) =>
  owner.api.apiKeys.createApiKey({ payload: { name: uniqueName("key"), ...body } })

/** The client of a runtime key. */
export const keyClient = (base: string, key: { readonly plaintext_key: string }) =>
  clientAt(base, { token: key.plaintext_key })

/**
 * A user of `role` in `owner`'s workspace: invited by the owner, the invite accepted through the trusted web
 * client (the server needs INTERNAL_API_KEY = INTERNAL_KEY). `api` acts in the owner's workspace.
 */
export const joinedAs = (base: string, owner: Tenant, role: "admin" | "member") =>
  Effect.gen(function* () {
    const user = yield* signUp(base)
    const email = `${uniqueName(role)}@example.com`
    yield* owner.api.team.createInvite({ payload: { email, role } })
    const internal = yield* clientAt(base, { token: INTERNAL_KEY })
    const mine = yield* internal.team.listMyWorkspaces({
      headers: { "x-service-user-id": user.user_id, "x-service-user-email": email }
    })
    expect(mine.workspaces.find((w) => w.id === owner.workspaceId)?.role).toBe(role)
    return { ...user, api: yield* clientAt(base, { token: user.jwt, workspace: owner.workspaceId }) } satisfies User
  })

/** A new environment in the workspace `owner.api` acts in. */
export const createEnvironment = (owner: Caller, slug = uniqueName("env").replaceAll("_", "-")) =>
  owner.api.environments.createEnvironment({ payload: { name: slug, slug } })

/** A session for an OAuth identity, through the internal endpoint. */
export const oauthSession = (base: string, input: { email: string; provider: string; provider_subject: string }) =>
  Effect.flatMap(clientAt(base, { token: INTERNAL_KEY }), (internal) => internal.auth.oauthSession({ payload: input }))
