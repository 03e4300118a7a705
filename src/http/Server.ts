/**
 * The HTTP server: Node's http server, on which each request is offered to
 * the fast lane first (Lane.ts) and otherwise handed to the platform's own
 * handler for the HttpApi app (`NodeHttpServer.makeHandler`), wrapped in the
 * request pipeline. The platform's `HttpServer` service (address, listening,
 * closing) is the one `NodeHttpServer.layer` makes over this same server.
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { Context, Effect, Layer } from "effect"
import { createServer, type IncomingMessage, type Server, type ServerResponse, STATUS_CODES } from "node:http"
import type { Duplex } from "node:stream"
import { AppConfig } from "../platform/Config.js"
import { Limits } from "../platform/Schemas.js"
import type { LaneListener } from "./Lane.js"

/** What Node's parser refused before any handler saw a request: status, code and message, by Node's error code. */
const clientErrorAnswers: Readonly<Record<string, readonly [number, string, string]>> = {
  HPE_HEADER_OVERFLOW: [431, "headers_too_large", "The request line and headers exceed the 16 KiB limit."],
  ERR_HTTP_REQUEST_TIMEOUT: [408, "request_timeout", "The request was not received in time."]
}
const malformedRequest = [400, "malformed_request", "The request is not valid HTTP/1.1."] as const

/**
 * Node answers these itself with an empty body; here they get the conventions' error body. As in Node's own
 * handler, nothing is written once an answer on the connection has begun, and the connection is closed.
 */
const answerClientError = (error: Error & { readonly code?: string }, socket: Duplex) => {
  const inFlight = (socket as Duplex & { readonly _httpMessage?: ServerResponse | null })._httpMessage
  if (socket.writable && error.code !== "ECONNRESET" && (inFlight == null || !inFlight.headersSent)) {
    const [status, code, message] = clientErrorAnswers[error.code ?? ""] ?? malformedRequest
    const body = JSON.stringify({ error: { code, message } })
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`
    )
  }
  socket.destroy()
}

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
      server.on("clientError", answerClientError)
      return Layer.merge(
        NodeHttpServer.layer(() => server, options),
        Layer.succeed(NodeServer, server)
      )
    })
  )

/**
 * The longest path parameter (percent-decoded) the router matches. Its default, 100, is below the id cap
 * (Limits.identifier, 200): an agent id or MCP tool name of 101-200 characters could be created but not
 * addressed (404 route_not_found). Above the cap, the path schema refuses it by name (400).
 */
const MAX_PATH_PARAM_LENGTH = 5 * Limits.identifier

/**
 * Serves the HttpApi app (with the routes and middleware other layers added to it) on the Node server:
 * every request goes to `lane` first, and to the platform's handler when the lane does not take it.
 */
export const serveApi = <E, R>(lane: Effect.Effect<LaneListener, E, R>) =>
  Layer.scopedDiscard(
    Effect.gen(function* () {
      const server = yield* NodeServer
      const app = yield* HttpApiBuilder.httpApp.pipe(
        HttpRouter.withRouterConfig({ maxParamLength: MAX_PATH_PARAM_LENGTH })
      )
      const handler = yield* NodeHttpServer.makeHandler(app)
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
