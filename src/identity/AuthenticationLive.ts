/** Implementations of the credential middlewares declared in Authentication.ts. */
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import { Effect, Layer, Redacted } from "effect"
import { Unauthorized } from "../http/Errors.js"
import { currentRequest } from "../http/RequestInfo.js"
import { Authentication, InternalAuthentication } from "./Authentication.js"
import { Authenticator } from "./Authenticator.js"
import { Credentials } from "./Credentials.js"

export const AuthenticationLive = Layer.effect(
  Authentication,
  Effect.map(Authenticator, (authenticator) => ({
    bearer: (token) =>
      Effect.gen(function* () {
        const request = yield* HttpServerRequest.HttpServerRequest
        // The route the request pipeline found for this request; none only outside the pipeline (fails closed).
        const { reportTurn, route } = yield* currentRequest
        const caller = yield* authenticator.settle({
          token: Redacted.value(token),
          workspaceHeader: request.headers["x-service-workspace-id"],
          group: route?.group ?? "",
          endpoint: route?.endpoint ?? "",
          method: request.method
        })
        // A report runs within its workspace's report permits (ReportPermits.ts): known only from here on.
        if (reportTurn !== undefined) yield* reportTurn.admit(caller.workspaceId)
        return caller
      })
  }))
).pipe(Layer.provide(Authenticator.Default))

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
