/**
 * The one authenticator: a bearer credential (a user session JWT or a
 * runtime key) to the caller of one endpoint, or the 401/403/404 to answer.
 * Written once as warm steps (src/platform/Warm.ts): from memory, a cached
 * runtime key and cached feature flags decide at once (the fast lane's
 * direct path); otherwise the credential is resolved and the flags are
 * read, and the same step decides. The credential middleware of the
 * contract and the fast lane both authenticate here.
 */
import { Effect, Option } from "effect"
import type { Forbidden, NotFound, Unauthorized } from "../http/Errors.js"
import { needs, ready, refused, type WarmSteps, warmUseCase } from "../platform/Warm.js"
import { accessRefusal } from "./Access.js"
import { ApiKeys, LIVE_KEY_PREFIX } from "./ApiKeys.js"
import type { Caller } from "./Authentication.js"
import { Credentials, runtimeKeyCaller } from "./Credentials.js"
import { type FeatureFlags, groupClosed, WorkspaceFeatures } from "./FeatureFlags.js"

/** What authenticating a request reads of it: its credential and the endpoint it calls. */
export interface CredentialRequest {
  /** The bearer token ("" when none was sent). */
  readonly token: string
  /** `X-SERVICE-Workspace-Id`: the workspace a user session acts in. */
  readonly workspaceHeader: string | undefined
  readonly group: string
  readonly endpoint: string
  readonly method: string
}

/** What authenticating may refuse with: no valid credential (401), no access (403), no such workspace (404). */
export type AuthenticationError = Unauthorized | Forbidden | NotFound

interface Loaded {
  readonly caller?: Caller
  readonly flags?: Option.Option<FeatureFlags>
}

type Need = { readonly _tag: "caller" } | { readonly _tag: "flags"; readonly workspaceId: string }

export class Authenticator extends Effect.Service<Authenticator>()("identity/Authenticator", {
  effect: Effect.gen(function* () {
    const credentials = yield* Credentials
    const apiKeys = yield* ApiKeys
    const features = yield* WorkspaceFeatures

    /** The caller of a runtime key in the cache; undefined for a session, an uncached or a refused key. */
    const cachedKeyCaller = (token: string) => {
      if (!token.startsWith(LIVE_KEY_PREFIX)) return undefined
      const key = apiKeys.peek(token)
      return key !== undefined && Option.isSome(key) ? runtimeKeyCaller(key.value) : undefined
    }

    const steps = (
      request: CredentialRequest
    ): WarmSteps<Loaded, Caller, AuthenticationError, Need, AuthenticationError, never> => ({
      step: (loaded) => {
        const caller = loaded.caller ?? cachedKeyCaller(request.token)
        if (caller === undefined) return needs({ _tag: "caller" })
        const refusal = accessRefusal(caller, request)
        if (refusal !== undefined) return refused(refusal)
        // Feature flags close whole groups (red-team, knowledge sources, gateway) per workspace.
        const flags = loaded.flags ?? features.cachedFlags(caller.workspaceId)
        if (flags === undefined) return needs({ _tag: "flags", workspaceId: caller.workspaceId })
        const closed = groupClosed(flags, request.group)
        return closed === undefined ? ready(caller) : refused(closed)
      },
      load: (need, loaded) =>
        need._tag === "caller"
          ? Effect.map(credentials.resolve(request.token, request.workspaceHeader), (caller) => ({ ...loaded, caller }))
          : Effect.map(features.flags(need.workspaceId), (flags) => ({ ...loaded, flags }))
    })

    return warmUseCase({ name: "Authenticator.authenticate", initial: {}, steps })
  }),
  dependencies: [Credentials.Default, ApiKeys.Default, WorkspaceFeatures.Default]
}) {}
