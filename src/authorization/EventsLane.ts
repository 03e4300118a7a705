/**
 * `POST /v1/events` in the fast lane (src/platform/FastLane.ts): what the
 * router's route does, with the same pieces (the Authentication middleware's
 * authenticator, the contract's payload and success schemas,
 * `Authorization.authorize`), so every status and body is unchanged. A
 * request the lane does not take still reaches the router's handler.
 */
import { Effect, Schema } from "effect"
import { makeDirectAuthenticator, makeLaneAuthenticator } from "../identity/AuthenticationLive.js"
import type { FastHandler } from "../http/Lane.js"
import { Authorization } from "./Authorization.js"
import { AuthorizationResponse, ProposedEvent } from "./Domain.js"

const decodeEvent = Schema.decodeUnknown(ProposedEvent)
const encodeResponse = Schema.encode(AuthorizationResponse)

/** The lane's entries for this domain, by `group.endpoint`. */
export const eventsLane = Effect.gen(function* () {
  const authorization = yield* Authorization
  const authenticate = yield* makeLaneAuthenticator
  const authorizeEvent: FastHandler = (request) =>
    Effect.gen(function* () {
      const caller = yield* authenticate(request)
      const decision = yield* authorization.authorize(caller, yield* decodeEvent(request.body))
      return { status: 200, body: yield* encodeResponse(decision) }
    })
  // Warm decisions take the direct path; the rest (and every error to answer) the Effect handler.
  const direct = authorization.direct(yield* makeDirectAuthenticator)
  return [["events.authorizeEvent", Object.assign(authorizeEvent, { direct })]] as const
})
