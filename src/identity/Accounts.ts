/**
 * Users and sessions: signup (user + personal organization, workspace and
 * default environment in one transaction), login, password change (which
 * ends older sessions) and the internal OAuth session exchange.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { randomUUID } from "node:crypto"
import { Conflict, Forbidden, Unauthorized, tooManyRequests } from "../http/Errors.js"
import { AppConfig } from "../platform/Config.js"
import { transactionOf } from "../platform/Sql.js"
import { Session, UserId, WorkspaceId } from "./Domain.js"
import { Passwords } from "./Passwords.js"
import { IdentityRepo, type UserRow } from "./Repo.js"
import { LoginThrottle } from "./LoginThrottle.js"
import { SessionTokens } from "./Tokens.js"
import { Workspaces } from "./Workspaces.js"

const signupDisabled = new Forbidden({
  code: "signup_disabled",
  message: "Signup is turned off on this service (SIGNUP_ENABLED=false): accounts come through its OAuth sign-in."
})

const badCredentials = new Unauthorized({
  code: "invalid_credentials",
  message: "The username or password is not correct."
})

export class Accounts extends Effect.Service<Accounts>()("identity/Accounts", {
  effect: Effect.gen(function* () {
    const repo = yield* IdentityRepo
    const inTransaction = transactionOf(yield* SqlClient.SqlClient)
    const tokens = yield* SessionTokens
    const workspaces = yield* Workspaces
    const throttle = yield* LoginThrottle
    const passwords = yield* Passwords
    const { signupEnabled } = yield* AppConfig

    const session = (
      user: { id: string; username: string; default_workspace_id: string | null },
      passwordVersion: number
    ) =>
      Effect.map(tokens.issue({ userId: user.id, passwordVersion }), (jwt) =>
        Session.make({
          jwt,
          user_id: UserId.make(user.id),
          username: user.username,
          workspace_id: user.default_workspace_id === null ? null : WorkspaceId.make(user.default_workspace_id)
        })
      )

    /** Creates a user with a personal workspace; `None` when the username is taken. */
    const createUser = (username: string, email: string | null, passwordHash: string | null) =>
      inTransaction(
        Effect.gen(function* () {
          const id = randomUUID()
          if (!(yield* repo.insertUser({ id, username, email, passwordHash }))) return Option.none<UserRow>()
          const workspaceId = yield* workspaces.provision(id, `${username}'s workspace`)
          yield* repo.setDefaultWorkspace(id, workspaceId)
          return yield* repo.findUserById(id)
        })
      )

    const signup = Effect.fn("Accounts.signup")(function* (
      input: { readonly username: string; readonly password: string },
      clientAddress: string
    ) {
      if (!signupEnabled) return yield* signupDisabled
      const addressKey = [`address:${clientAddress}`]
      const wait = yield* throttle.signups.take(addressKey)
      if (wait > 0) {
        return yield* tooManyRequests(wait, `Too many signups from your address; retry in ${wait} seconds.`)
      }
      const username = input.username.trim()
      // Refused for lack of a hashing slot: no account was made, so the signup does not count.
      const passwordHash = yield* passwords
        .hash(input.password)
        .pipe(Effect.tapError(() => throttle.signups.giveBack(addressKey)))
      const created = yield* createUser(username, null, passwordHash)
      if (Option.isNone(created)) {
        return yield* new Conflict({ code: "username_taken", message: `The username ${username} is already taken.` })
      }
      return yield* session(created.value, created.value.password_version)
    })

    /**
     * Checks a username and password digest, throttling attempts per username
     * and client address. The attempt is counted before the (slow) check, so
     * concurrent guesses beyond the limit are refused without being checked.
     */
    const authenticate = (username: string, password: string, clientAddress: string) =>
      Effect.gen(function* () {
        const userKey = `user:${username.trim().toLowerCase()}`
        const keys = [userKey, `address:${clientAddress}`]
        const wait = yield* throttle.logins.take(keys)
        if (wait > 0) return yield* tooManyRequests(wait, `Too many failed sign-in attempts; retry in ${wait} seconds.`)
        const user = yield* repo.findUserByUsername(username.trim())
        const stored = Option.isSome(user) ? user.value.password_hash : null
        // Unknown users and password-less (OAuth) users are checked against a decoy hash: same cost, no hint.
        const verification = yield* passwords.verify(password, stored).pipe(
          // Refused for lack of a hashing slot: nothing was checked, so the attempt does not count.
          Effect.tapError(() => throttle.logins.giveBack(keys))
        )
        if (Option.isNone(user) || stored === null || !verification.matches) return yield* badCredentials
        yield* throttle.logins.giveBack(keys)
        yield* throttle.logins.clear([userKey])
        if (verification.outdated) {
          // Best effort: with every hashing slot busy the sign-in still succeeds, and a later one rehashes.
          yield* passwords.hash(password).pipe(
            Effect.flatMap((fresh) => repo.rehashPassword(user.value.id, stored, fresh)),
            Effect.catchTag("TooManyRequests", () => Effect.void)
          )
        }
        return user.value
      })

    const login = Effect.fn("Accounts.login")(
      (input: { readonly username: string; readonly password: string }, clientAddress: string) =>
        Effect.flatMap(authenticate(input.username, input.password, clientAddress), (user) =>
          session(user, user.password_version)
        )
    )

    const changePassword = Effect.fn("Accounts.changePassword")(function* (
      input: { readonly username: string; readonly current_password: string; readonly new_password: string },
      clientAddress: string
    ) {
      const user = yield* authenticate(input.username, input.current_password, clientAddress)
      // Only the password that was checked is replaced: of concurrent changes with it, one wins.
      const version = yield* repo.setPassword(user.id, yield* passwords.hash(input.new_password), user.password_version)
      if (Option.isNone(version)) {
        return yield* new Conflict({
          code: "password_changed",
          message: "The password was changed by another request meanwhile; sign in with the new password."
        })
      }
      return yield* session(user, version.value)
    })

    /** Finds the user by provider subject, else links by email, else creates one; answers a session. */
    const oauthSession = Effect.fn("Accounts.oauthSession")(
      (input: { readonly email: string; readonly provider: string; readonly provider_subject: string }) =>
        inTransaction(
          Effect.gen(function* () {
            const email = input.email.trim().toLowerCase()
            // Concurrent first sign-ins of one identity (or one email) must create one user.
            yield* repo.lockKey(`oauth:${input.provider}:${input.provider_subject}`)
            yield* repo.lockKey(`email:${email}`)
            const linked = yield* repo.findUserByIdentity(input.provider, input.provider_subject)
            const user = Option.isSome(linked)
              ? linked.value
              : yield* Effect.gen(function* () {
                  const byEmail = yield* repo.findUserByEmail(email)
                  if (Option.isSome(byEmail)) return byEmail.value
                  for (let attempt = 0; ; attempt++) {
                    const username = attempt === 0 ? email : `${email}-${attempt}`
                    const created = yield* createUser(username, email, null)
                    if (Option.isSome(created)) return created.value
                  }
                })
            yield* repo.insertIdentity({
              provider: input.provider,
              subject: input.provider_subject,
              userId: user.id,
              email
            })
            return yield* session(user, user.password_version)
          })
        )
    )

    return { signup, login, changePassword, oauthSession }
  }),
  dependencies: [
    IdentityRepo.Default,
    SessionTokens.Default,
    Workspaces.Default,
    LoginThrottle.Default,
    Passwords.Default
  ]
}) {}
