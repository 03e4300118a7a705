/**
 * Shared by the team suites (team-my-workspaces-http.test.ts,
 * team-invites-roles-http.test.ts): the server's settings, my-workspaces for
 * a user, and the members list.
 */
import { Effect } from "effect"
import { clientAt, type GuardrailClient } from "../support/Api.js"
import { INTERNAL_KEY } from "../support/Tenants.js"

/** The layer's settings: the internal key may ask my-workspaces for any user. */
export const config = { INTERNAL_API_KEY: INTERNAL_KEY }

/** GET /v1/team/my-workspaces for `userId` with `token` (none: anonymous), naming `email` when given. */
export const myWorkspaces = (
  base: string,
  userId: string,
  options: { readonly token?: string | undefined; readonly email?: string | undefined } = {}
) =>
  Effect.flatMap(clientAt(base, { token: options.token }), (api) =>
    api.team.listMyWorkspaces({
      headers: {
        "x-service-user-id": userId,
        ...(options.email === undefined ? {} : { "x-service-user-email": options.email })
      }
    })
  )

/** GET /v1/team/members. */
export const members = (owner: { readonly api: GuardrailClient }) => owner.api.team.listMembers({ urlParams: {} })
