/**
 * The gateway's proxy routes in the fast lane (src/platform/FastLane.ts):
 * the same authenticator (with the messages dialect's `x-api-key` standing
 * for the bearer token, as in the pipeline), path schema and
 * `GatewayProxy.forward` as the router's raw handlers. The upstream answer
 * streams back through Node, and the call's usage is recorded when the
 * request's scope closes (answer out, or client gone). A call whose lookups
 * are all warm takes the direct path (ProxyDirect.ts) instead.
 */
import { Effect, Schema } from "effect"
import { makeDirectAuthenticator, makeLaneAuthenticator } from "../identity/AuthenticationLive.js"
import type { FastHandler } from "../http/Lane.js"
import { withMessagesDialectKey } from "../http/Pipeline.js"
import { RoutePath } from "./Api.js"
import { GatewayProxy } from "./Proxy.js"
import type { Dialect } from "./UsageMeter.js"

const decodePath = Schema.decodeUnknown(RoutePath)

/** The lane's entries for this domain, by `group.endpoint`. */
export const gatewayLane = Effect.gen(function* () {
  const proxy = yield* GatewayProxy
  const authenticate = yield* makeLaneAuthenticator
  const forward =
    (dialect: Dialect): FastHandler =>
    (request) =>
      Effect.gen(function* () {
        const caller = yield* authenticate({
          ...request,
          headers: withMessagesDialectKey(request.headers, request.route)
        })
        const { id } = yield* decodePath(request.params)
        const response = yield* proxy.forward(dialect, id, {
          caller,
          requestId: request.requestId,
          text: request.text,
          headers: request.headers,
          json: { value: request.body }
        })
        return { response }
      })
  // Warm calls take the direct path; the rest (and every error to answer) the Effect handler.
  const authenticateDirectly = yield* makeDirectAuthenticator
  const route = (dialect: Dialect): FastHandler =>
    Object.assign(forward(dialect), { direct: proxy.direct(authenticateDirectly, dialect) })
  return [
    ["gatewayProxy.proxyMessages", route("messages")],
    ["gatewayProxy.proxyChatCompletions", route("chat")]
  ] as const
})
