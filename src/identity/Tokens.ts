/**
 * User session JWTs (HS256, `jose`): issuer and audience fixed, `sub` the
 * user id, `pwv` the user's password version (a password change bumps it, so
 * sessions issued before the change stop working), 12 hours by default.
 * Tokens without `exp` or `iat` are refused.
 */
import { Effect, Option, Redacted } from "effect"
import { jwtVerify, SignJWT } from "jose"
import { AppConfig } from "../platform/Config.js"
import { Secrets } from "../platform/Secrets.js"

const ISSUER = "guardrail-service"
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const AUDIENCE = "guardrail-api"

export interface SessionClaims {
  readonly userId: string
  readonly passwordVersion: number
}

export class SessionTokens extends Effect.Service<SessionTokens>()("identity/SessionTokens", {
  effect: Effect.gen(function* () {
    const secrets = yield* Secrets
    const config = yield* AppConfig
    const key = new TextEncoder().encode(Redacted.value(secrets.jwtSecret))

    const issue = (claims: SessionClaims) =>
      Effect.promise(() =>
        new SignJWT({ pwv: claims.passwordVersion })
          .setProtectedHeader({ alg: "HS256", typ: "JWT" })
          .setIssuer(ISSUER)
          .setAudience(AUDIENCE)
          .setSubject(claims.userId)
          .setIssuedAt()
          // Rounded up to the next whole second (JWT times are seconds): a session lasts at least its TTL.
          .setExpirationTime(Math.ceil(Date.now() / 1000 + config.sessionTtlSeconds))
          .sign(key)
      )

    /** `None` for anything that is not a valid, unexpired session token of this service. */
    const verify = (token: string) =>
      Effect.promise(() =>
        jwtVerify(token, key, {
          issuer: ISSUER,
          audience: AUDIENCE,
          algorithms: ["HS256"],
          // jose checks `exp` only when present: a token without it would never expire.
          requiredClaims: ["exp", "iat", "sub"]
        }).then(
          ({ payload }) =>
            typeof payload.sub === "string" && UUID.test(payload.sub) && typeof payload["pwv"] === "number"
              ? Option.some<SessionClaims>({ userId: payload.sub, passwordVersion: payload["pwv"] })
              : Option.none<SessionClaims>(),
          () => Option.none<SessionClaims>()
        )
      )

    return { issue, verify }
  })
}) {}
