/**
 * `POST /v1/events` without the HttpApi router: the request pipeline
 * (request id, access log, metrics, drain, body checks, error mapping and
 * encoding) hands this endpoint's checked request straight here. It does
 * what the router's route would do, with the same pieces: the
 * Authentication middleware's authenticator, the contract's payload and
 * success schemas, and `Authorization.authorize`. Every other request, and
 * this one without a JSON body, still goes through the router.
 */
import { HttpApiError, type HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Context, Effect, Layer, ParseResult, Schema } from "effect"
import { makeAuthenticator } from "../identity/AuthenticationLive.js"
import type { DirectRoutes, RouteEntry } from "../platform/HttpPipeline.js"
import { Authorization } from "./Authorization.js"
import { AuthorizationResponse, ProposedEvent } from "./Domain.js"

// HttpApiSecurity.bearer reads the Authorization header after this many characters ("Bearer "), unchecked.
const BEARER_PREFIX_LENGTH = "Bearer ".length

const decodeEvent = Schema.decodeUnknown(ProposedEvent)
const encodeResponse = Schema.encode(AuthorizationResponse)

const makeDirectRoutes = Effect.gen(function* () {
  const authorization = yield* Authorization
  const authenticate = yield* makeAuthenticator

  const authorizeEvent = (route: RouteEntry, request: HttpServerRequest.HttpServerRequest) =>
    Effect.gen(function* () {
      const token = (request.headers.authorization ?? "").slice(BEARER_PREFIX_LENGTH)
      const caller = yield* authenticate(token, request, route)
      const payload = yield* Effect.flatMap(Effect.orDie(request.json), decodeEvent)
      const decision = yield* authorization.authorize(caller, payload)
      return HttpServerResponse.unsafeJson(yield* encodeResponse(decision), { status: 200 })
    }).pipe(Effect.catchIf(ParseResult.isParseError, HttpApiError.HttpApiDecodeError.refailParseError))

  const direct: DirectRoutes<Effect.Effect.Error<ReturnType<typeof authorizeEvent>>> = (route, request) =>
    route.group === "events" && route.endpoint === "authorizeEvent" ? authorizeEvent(route, request) : undefined
  return direct
})

/** The endpoints the request pipeline answers directly (see `requestPipeline`). */
export class EventsDirect extends Context.Tag("authorization/EventsDirect")<
  EventsDirect,
  Effect.Effect.Success<typeof makeDirectRoutes>
>() {}

export const EventsDirectLive = Layer.effect(EventsDirect, makeDirectRoutes)
