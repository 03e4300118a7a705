/**
 * The credential middlewares the contract declares (their implementations
 * are in AuthenticationLive.ts):
 * - `Authentication`: a user session JWT or a workspace runtime key
 *   (`gr_live_...`), resolving the caller, the workspace and whether this
 *   credential and role may call the endpoint (Access.ts);
 * - `InternalAuthentication`: the configured internal key, and nothing else.
 */
import * as HttpApiMiddleware from "@effect/platform/HttpApiMiddleware"
import * as HttpApiSecurity from "@effect/platform/HttpApiSecurity"
import { Context, Effect, Schema } from "effect"
import { ForbiddenWire, NotFoundWire, UnauthorizedWire } from "../http/Errors.js"

export type WorkspaceRole = "owner" | "admin" | "member"

export interface Caller {
  readonly kind: "user" | "runtime_key"
  /** The user id (user sessions) or the API key id (runtime keys). */
  readonly principalId: string
  readonly userId: string | null
  readonly apiKeyId: string | null
  readonly workspaceId: string
  /** The environment a runtime key is bound to; null for user sessions. */
  readonly environmentId: string | null
  /** The user's role in the workspace; runtime keys act as members. */
  readonly role: WorkspaceRole
}

export class CurrentCaller extends Context.Tag("identity/CurrentCaller")<CurrentCaller, Caller>() {}

export class Authentication extends HttpApiMiddleware.Tag<Authentication>()("identity/Authentication", {
  provides: CurrentCaller,
  failure: Schema.Union(UnauthorizedWire, ForbiddenWire, NotFoundWire),
  security: { bearer: HttpApiSecurity.bearer }
}) {}

export class InternalAuthentication extends HttpApiMiddleware.Tag<InternalAuthentication>()(
  "identity/InternalAuthentication",
  {
    failure: UnauthorizedWire,
    security: { internalKey: HttpApiSecurity.bearer }
  }
) {}

/** Runs `run` with the caller's workspace id: how handlers scope every call. */
export const inWorkspace = <A, E, R>(run: (workspaceId: string) => Effect.Effect<A, E, R>) =>
  Effect.flatMap(CurrentCaller, (caller) => run(caller.workspaceId))
