/**
 * User session JWTs (HS256, `jose`): issuer and audience fixed, `sub` the
 * user id, `pwv` the user's password version (a password change bumps it, so
 * sessions issued before the change stop working), `jti` a random session
 * id (POST /v1/auth/logout ends that one session), 12 hours by default.
 * Tokens without `exp`, `iat` or `jti` are refused.
 */
import { Effect, Option, Redacted } from "effect"
import { jwtVerify, SignJWT } from "jose"
import { AppConfig } from "../platform/Config.js"
import { randomToken } from "../platform/Ids.js"
import { Secrets } from "../platform/Secrets.js"

const ISSUER = "guardrail-service"
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const AUDIENCE = "guardrail-api"

export interface SessionClaims {
  readonly userId: string
  readonly passwordVersion: number
}

/** What a verified token says besides its claims: which session it is and when it expires. */
export interface VerifiedSession extends SessionClaims {
  readonly sessionId: string
  readonly expiresAt: Date
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
          .setJti(randomToken(16))
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
          // jose checks `exp` only when present: a token without it would never expire; one without a jti
          // could not be signed out.
          requiredClaims: ["exp", "iat", "sub", "jti"]
        }).then(
          ({ payload }) =>
            typeof payload.sub === "string" &&
            UUID.test(payload.sub) &&
            typeof payload["pwv"] === "number" &&
            typeof payload.jti === "string" &&
            payload.jti !== "" &&
            typeof payload.exp === "number"
              ? Option.some<VerifiedSession>({
                  userId: payload.sub,
                  passwordVersion: payload["pwv"],
                  sessionId: payload.jti,
                  expiresAt: new Date(payload.exp * 1000)
                })
              : Option.none<VerifiedSession>(),
          () => Option.none<VerifiedSession>()
        )
      )

    return { issue, verify }
  })
}) {}
