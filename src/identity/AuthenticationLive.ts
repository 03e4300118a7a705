/** Implementations of the credential middlewares declared in Authentication.ts. */
import type { FastRequest } from "../http/Lane.js"
import { HttpRouter, HttpServerRequest } from "@effect/platform"
import { Effect, Layer, Option, Redacted } from "effect"
import { GuardrailApi } from "../Api.js"
import { Forbidden, Unauthorized } from "../http/Errors.js"
import { makeRouteTable } from "../http/Pipeline.js"
import { checkAccess } from "./Access.js"
import { ApiKeys, LIVE_KEY_PREFIX } from "./ApiKeys.js"
import { Authentication, type Caller, InternalAuthentication } from "./Authentication.js"
import { Credentials, runtimeKeyCaller } from "./Credentials.js"
import { WorkspaceFeatures } from "./FeatureFlags.js"

const routes = new Map(makeRouteTable(GuardrailApi).map((route) => [`${route.method} ${route.template}`, route]))

/**
 * Resolves a bearer credential to the caller of one endpoint, or fails with the 401/403/404 to answer:
 * the Authentication middleware and the `POST /v1/events` direct path both call this.
 */
export const makeAuthenticator = Effect.gen(function* () {
  const credentials = yield* Credentials
  const features = yield* WorkspaceFeatures
  return (
    token: string,
    request: { readonly method: string; readonly headers: HttpServerRequest.HttpServerRequest["headers"] },
    entry: { readonly group: string; readonly endpoint: string } | undefined
  ) =>
    Effect.gen(function* () {
      const caller = yield* credentials.resolve(token, request.headers["x-service-workspace-id"])
      const verdict = checkAccess(caller, {
        group: entry?.group ?? "",
        endpoint: entry?.endpoint ?? "",
        method: request.method
      })
      if (verdict === "runtime_key_not_allowed") {
        return yield* new Forbidden({
          code: "forbidden_credential",
          message: "Workspace runtime keys cannot call this endpoint; use a user session."
        })
      }
      if (verdict === "role_too_low") {
        return yield* new Forbidden({
          code: "insufficient_role",
          message: `Your role (${caller.role}) cannot call this endpoint; ask a workspace admin or owner.`
        })
      }
      // Feature flags close whole groups (red-team, knowledge sources, gateway) per workspace.
      yield* features.checkGroup(caller.workspaceId, entry?.group ?? "")
      return caller
    })
})

// HttpApiSecurity.bearer reads the Authorization header after this many characters ("Bearer "), unchecked.
const BEARER_PREFIX_LENGTH = "Bearer ".length

/** The authenticator for fast-lane requests (src/platform/FastLane.ts): the bearer token, as the middleware reads it. */
export const makeLaneAuthenticator = Effect.map(
  makeAuthenticator,
  (authenticate) => (request: FastRequest) =>
    authenticate((request.headers["authorization"] ?? "").slice(BEARER_PREFIX_LENGTH), request, request.route)
)

/**
 * The lane authenticator from warm state only, for direct handlers
 * (src/platform/FastLane.ts): the caller of a cached, active runtime key
 * whose access and feature flags let it call the route; undefined for
 * anything else (a session, a cold cache, a refusal), which the Effect path
 * then answers.
 */
export type DirectAuthenticator = (request: FastRequest, headers?: FastRequest["headers"]) => Caller | undefined

export const makeDirectAuthenticator = Effect.gen(function* () {
  const apiKeys = yield* ApiKeys
  const features = yield* WorkspaceFeatures
  return (request: FastRequest, headers: FastRequest["headers"] = request.headers): Caller | undefined => {
    const token = (headers["authorization"] ?? "").slice(BEARER_PREFIX_LENGTH)
    if (!token.startsWith(LIVE_KEY_PREFIX)) return undefined
    const key = apiKeys.peek(token)
    if (key === undefined || Option.isNone(key)) return undefined
    const caller = runtimeKeyCaller(key.value)
    const { group, endpoint } = request.route
    if (checkAccess(caller, { group, endpoint, method: request.method }) !== "allowed") return undefined
    return features.peekGroup(caller.workspaceId, group) === true ? caller : undefined
  }
})

export const AuthenticationLive = Layer.effect(
  Authentication,
  Effect.map(makeAuthenticator, (authenticate) => ({
    bearer: (token) =>
      Effect.gen(function* () {
        const request = yield* HttpServerRequest.HttpServerRequest
        const { route } = yield* HttpRouter.RouteContext
        return yield* authenticate(Redacted.value(token), request, routes.get(`${request.method} ${String(route.path)}`))
      })
  }))
).pipe(Layer.provide(Credentials.Default), Layer.provide(WorkspaceFeatures.Default))

export const InternalAuthenticationLive = Layer.effect(
  InternalAuthentication,
  Effect.map(Credentials, (credentials) => ({
    internalKey: (token: Redacted.Redacted<string>) =>
      credentials.isInternalKey(Redacted.value(token))
        ? Effect.void
        : Effect.fail(
            new Unauthorized({ code: "unauthenticated", message: "This endpoint accepts only the internal API key." })
          )
  }))
).pipe(Layer.provide(Credentials.Default))
