/**
 * Resolves bearer credentials to callers: user session JWTs (with the
 * workspace from `X-SERVICE-Workspace-Id` or the user's default), runtime
 * keys (bound to their workspace and environment) and the internal key.
 */
import { Effect, Option, Redacted } from "effect"
import { createHash, timingSafeEqual } from "node:crypto"
import { AppConfig } from "../platform/Config.js"
import { NotFound, Unauthorized } from "../http/Errors.js"
import { ApiKeys, LIVE_KEY_PREFIX, type ResolvedKey } from "./ApiKeys.js"
import type { Caller } from "./Authentication.js"
import { IdentityRepo } from "./Repo.js"
import { SessionTokens } from "./Tokens.js"
import { Workspaces } from "./Workspaces.js"

export const missingCredential = new Unauthorized({
  code: "unauthenticated",
  message: "Send a valid credential as Authorization: Bearer <session JWT or gr_live_ key>."
})

/** The caller a runtime key acts as: a member of its workspace, bound to its environment. */
export const runtimeKeyCaller = (key: ResolvedKey): Caller => ({
  kind: "runtime_key",
  principalId: key.id,
  userId: null,
  apiKeyId: key.id,
  workspaceId: key.workspaceId,
  environmentId: key.environmentId,
  role: "member"
})

const digest = (value: string) => createHash("sha256").update(value).digest()

export class Credentials extends Effect.Service<Credentials>()("identity/Credentials", {
  effect: Effect.gen(function* () {
    const config = yield* AppConfig
    const tokens = yield* SessionTokens
    const apiKeys = yield* ApiKeys
    const repo = yield* IdentityRepo
    const workspaces = yield* Workspaces
    const internalKey = Option.map(config.internalApiKey, (key) => digest(Redacted.value(key)))

    const isInternalKey = (credential: string) =>
      Option.isSome(internalKey) && credential !== "" && timingSafeEqual(digest(credential), internalKey.value)

    /** A valid session JWT issued after the user's last password change and not signed out: its user and claims. */
    const session = Effect.fn("Credentials.session")(function* (credential: string) {
      const claims = yield* tokens.verify(credential)
      if (Option.isNone(claims)) return yield* missingCredential
      const user = yield* repo.findSessionUser({ userId: claims.value.userId, sessionId: claims.value.sessionId })
      if (Option.isNone(user)) return yield* missingCredential
      if (user.value.ended) {
        return yield* new Unauthorized({
          code: "session_ended",
          message: "This session was signed out; sign in again."
        })
      }
      if (user.value.password_version !== claims.value.passwordVersion) {
        return yield* new Unauthorized({
          code: "session_expired",
          message: "This session ended when the password changed; sign in again."
        })
      }
      return { user: user.value, claims: claims.value }
    })

    /** The user of a valid session JWT (see `session`). */
    const sessionUser = (credential: string) => Effect.map(session(credential), ({ user }) => user)

    /** Signs out the session of a valid session JWT: from then on it answers 401 `session_ended`. */
    const endSession = (credential: string) =>
      Effect.flatMap(session(credential), ({ claims, user }) =>
        repo.endSession(claims.sessionId, user.id, claims.expiresAt)
      )

    const fromSession = (credential: string, workspaceHeader: string | undefined) =>
      Effect.gen(function* () {
        const user = yield* sessionUser(credential)
        const workspaceId = workspaceHeader?.trim() || user.default_workspace_id
        if (workspaceId === null || workspaceId === undefined) {
          return yield* new NotFound({
            code: "workspace_not_found",
            message: "You have no workspace; create one first."
          })
        }
        const membership = yield* workspaces.membership(workspaceId, user.id)
        return {
          kind: "user",
          principalId: user.id,
          userId: user.id,
          apiKeyId: null,
          workspaceId: membership.id,
          environmentId: null,
          role: membership.role
        } satisfies Caller
      })

    const fromRuntimeKey = (credential: string) =>
      Effect.gen(function* () {
        const key = yield* apiKeys.authenticate(credential)
        if (Option.isNone(key)) {
          return yield* new Unauthorized({ code: "invalid_api_key", message: "This API key is unknown or revoked." })
        }
        return runtimeKeyCaller(key.value)
      })

    /** A user session or runtime key; the internal key is not accepted here. */
    const resolve = Effect.fn("Credentials.resolve")((credential: string, workspaceHeader: string | undefined) =>
      credential === ""
        ? Effect.fail(missingCredential)
        : credential.startsWith(LIVE_KEY_PREFIX)
          ? fromRuntimeKey(credential)
          : fromSession(credential, workspaceHeader)
    )

    return { isInternalKey, sessionUser, endSession, resolve }
  }),
  dependencies: [SessionTokens.Default, ApiKeys.Default, IdentityRepo.Default, Workspaces.Default]
}) {}
