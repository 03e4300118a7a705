/**
 * The HTTP server: Node's http server, on which each request is offered to
 * the fast lane first (Lane.ts) and otherwise handed to the platform's own
 * handler for the HttpApi app (`NodeHttpServer.makeHandler`), wrapped in the
 * request pipeline. The platform's `HttpServer` service (address, listening,
 * closing) is the one `NodeHttpServer.layer` makes over this same server.
 */
import { HttpApiBuilder } from "@effect/platform"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { Context, Effect, Layer } from "effect"
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import { AppConfig } from "../platform/Config.js"
import type { LaneListener } from "./Lane.js"

/** The Node server the service listens with. */
export class NodeServer extends Context.Tag("http/NodeServer")<NodeServer, Server>() {}

/**
 * Node's http server on `port` and `host`. A client gets HTTP_HEADERS_TIMEOUT_MS for its headers and
 * HTTP_REQUEST_TIMEOUT_MS for its whole request; neither limits the response, so a long stream back is not cut.
 */
export const nodeServer = (options: { readonly port: number; readonly host: string }) =>
  Layer.unwrapEffect(
    Effect.map(AppConfig, (config) => {
      // Node refuses a headers timeout longer than the request timeout.
      const headersTimeout = Math.min(config.httpHeadersTimeoutMillis, config.httpRequestTimeoutMillis)
      const server = createServer({
        requestTimeout: config.httpRequestTimeoutMillis,
        headersTimeout,
        // Longer than clients' and load balancers' idle timeouts (60 s is common): the client closes an idle
        // connection first, so a request is never sent on a socket the server is closing at that moment.
        keepAliveTimeout: 65_000,
        // Node checks both timeouts on this interval (30 s by default): often enough that they hold to about a second.
        connectionsCheckingInterval: Math.max(100, Math.min(1_000, Math.floor(headersTimeout / 2)))
      })
      return Layer.merge(
        NodeHttpServer.layer(() => server, options),
        Layer.succeed(NodeServer, server)
      )
    })
  )

/**
 * Serves the HttpApi app (with the routes and middleware other layers added to it) on the Node server:
 * every request goes to `lane` first, and to the platform's handler when the lane does not take it.
 */
export const serveApi = <E, R>(lane: Effect.Effect<LaneListener, E, R>) =>
  Layer.scopedDiscard(
    Effect.gen(function* () {
      const server = yield* NodeServer
      const handler = yield* NodeHttpServer.makeHandler(yield* HttpApiBuilder.httpApp)
      const offer = yield* lane
      const listener = (request: IncomingMessage, response: ServerResponse) => {
        if (!offer(request, response)) handler(request, response)
      }
      server.on("request", listener)
      // Released after the drain (docs/operations.md): what is still connected then is idle keep-alive
      // connections, or an answer past the drain limit; neither may hold the shutdown for the keep-alive timeout.
      // Listening stops first: a client that reconnects at once (an MCP client's event stream does) would
      // otherwise open a connection that nothing answers and nothing closes until its request times out.
      yield* Effect.addFinalizer(() =>
        Effect.sync(() => {
          server.off("request", listener)
          if (server.listening) server.close()
          server.closeAllConnections()
        })
      )
    })
  ).pipe(Layer.provide([HttpApiBuilder.Router.Live, HttpApiBuilder.Middleware.layer]))
