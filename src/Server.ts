/**
 * The HTTP server: the GuardrailApi with its handlers, the request guard and
 * request context middleware, `/openapi.json` and the `/docs` UI, on Node's
 * http server at HOST:PORT.
 */
import { HttpApiBuilder, HttpApiSwagger, HttpServer } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { type Context, Duration, Effect, FiberRef, Layer, LogLevel } from "effect"
import { createServer, IncomingMessage, ServerResponse } from "node:http"
import { GuardrailApi } from "./Api.js"
import { DashboardLive } from "./dashboard/Http.js"
import { ApiGroupsLive, FastLaneRoutesLive } from "./Http.js"
import { drainOnShutdown, makeTraffic, type Traffic } from "./operations/Drain.js"
import { AppConfig } from "./platform/Config.js"
import { FastLane, FastLaneRoutes, makeFastListener } from "./http/Lane.js"
import { makeRouteTable, requestPipeline } from "./http/Pipeline.js"

const routes = makeRouteTable(GuardrailApi)

const announce = Layer.effectDiscard(
  Effect.gen(function* () {
    const server = yield* HttpServer.HttpServer
    if (server.address._tag !== "TcpAddress") return
    const host = server.address.hostname === "0.0.0.0" || server.address.hostname === "::" ? "localhost" : server.address.hostname
    const base = `http://${host}:${server.address.port}`
    yield* Effect.logInfo(`Guardrail service listening: API ${base}  docs ${base}/docs`).pipe(
      Effect.annotateLogs({
        api_url: base,
        docs_url: `${base}/docs`,
        openapi_url: `${base}/openapi.json`,
        dashboard_url: `${base}/dashboard`
      })
    )
  })
)

/** Hands the server's fast lane its handlers for the life of the app (src/platform/FastLane.ts). */
const installFastLane = (traffic: Traffic, maxBodyBytes: number) =>
  Layer.scopedDiscard(
    Effect.gen(function* () {
      const lane = yield* FastLane
      const handlers = yield* FastLaneRoutes
      const minimum = yield* FiberRef.get(FiberRef.currentMinimumLogLevel)
      lane.listener = makeFastListener({
        routes,
        handlers,
        maxBodyBytes,
        traffic,
        logsRequests: LogLevel.greaterThanEqual(LogLevel.Info, minimum),
        runtime: yield* Effect.runtime<never>()
      })
      yield* Effect.addFinalizer(() => Effect.sync(() => (lane.listener = undefined)))
    })
  ).pipe(Layer.provide(FastLaneRoutesLive))

/** The API on the HttpServer and FastLane provided (`nodeServer`; tests put one on port 0). */
export const HttpAppLive = Layer.unwrapEffect(
  Effect.map(AppConfig, (config) => {
    // Requests in flight, drained on shutdown before the handlers and their services are released.
    const traffic = makeTraffic()
    // Built after (so released before) the server's handlers: the drain finishes while they still work.
    const drain = drainOnShutdown(traffic, Duration.seconds(config.shutdownDrainSeconds))
    const served = HttpApiBuilder.serve().pipe(
      Layer.provide(HttpApiSwagger.layer({ path: "/docs" })),
      Layer.provide(DashboardLive),
      Layer.provide(HttpApiBuilder.middlewareOpenApi({ path: "/openapi.json" })),
      Layer.provide(
        HttpApiBuilder.middleware(GuardrailApi, requestPipeline(routes, config.maxBodyBytes, traffic))
      ),
      Layer.provide(HttpApiBuilder.api(GuardrailApi).pipe(Layer.provide(ApiGroupsLive))),
      Layer.merge(announce),
      Layer.merge(installFastLane(traffic, config.maxBodyBytes))
    )
    return drain.pipe(Layer.provideMerge(served))
  })
)

/** How long a client may take to send its request's headers, and the whole request (milliseconds). */
interface RequestTimeouts {
  readonly requestTimeout: number
  readonly headersTimeout: number
}

/** A Node http server that offers each request to the lane before the Effect server's own listener. */
const laneServer = (lane: Context.Tag.Service<FastLane>, timeouts: RequestTimeouts) => () => {
  const server = createServer({
    ...timeouts,
    // Longer than clients' and load balancers' idle timeouts (60 s is common): the client closes an idle
    // connection first, so a request is never sent on a socket the server is closing at that moment.
    keepAliveTimeout: 65_000,
    // Node checks both timeouts on this interval (30 s by default): often enough that they hold to about a second.
    connectionsCheckingInterval: Math.max(100, Math.min(1_000, Math.floor(timeouts.headersTimeout / 2)))
  })
  const emit: (event: string, ...args: Array<unknown>) => boolean = server.emit.bind(server)
  server.emit = (event: string, ...args: Array<unknown>) => {
    const [request, response] = args
    if (
      event === "request" &&
      lane.listener !== undefined &&
      request instanceof IncomingMessage &&
      response instanceof ServerResponse &&
      lane.listener(request, response)
    ) {
      return true
    }
    return emit(event, ...args)
  }
  return server
}

/**
 * Node's http server on `port` and `host`, offering requests to the fast lane first. A client gets
 * HTTP_HEADERS_TIMEOUT_MS for its headers and HTTP_REQUEST_TIMEOUT_MS for its whole request; neither
 * limits the response, so a long stream back is not cut by them.
 */
export const nodeServer = (options: { readonly port: number; readonly host: string }) =>
  Layer.unwrapEffect(
    Effect.map(AppConfig, (config) => {
      const lane = FastLane.of({ listener: undefined })
      const timeouts = {
        requestTimeout: config.httpRequestTimeoutMillis,
        // Node refuses a headers timeout longer than the request timeout.
        headersTimeout: Math.min(config.httpHeadersTimeoutMillis, config.httpRequestTimeoutMillis)
      }
      return NodeHttpServer.layer(laneServer(lane, timeouts), options).pipe(Layer.merge(Layer.succeed(FastLane, lane)))
    })
  )

/** Node's http server at HOST:PORT. */
export const NodeServerLive = Layer.unwrapEffect(
  Effect.map(AppConfig, (config) => nodeServer({ port: config.port, host: config.host }))
)

export const HttpServerLive = HttpAppLive.pipe(Layer.provide(NodeServerLive))
