/**
 * The HTTP server: the GuardrailApi with its handlers, the request guard and
 * request context middleware, `/openapi.json` and the `/docs` UI, on Node's
 * http server at HOST:PORT.
 */
import { HttpApiBuilder, HttpApiSwagger, HttpServer } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Duration, Effect, Layer } from "effect"
import { createServer } from "node:http"
import { GuardrailApi } from "./Api.js"
import { DashboardLive } from "./dashboard/Http.js"
import { EventsDirect } from "./authorization/EventsDirect.js"
import { ApiGroupsLive, DirectRoutesLive } from "./Http.js"
import { drainOnShutdown, makeTraffic } from "./operations/Drain.js"
import { AppConfig } from "./platform/Config.js"
import { makeRouteTable, requestPipeline } from "./platform/HttpPipeline.js"

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

/** The API on whatever HttpServer is provided (tests provide one on port 0). */
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
        HttpApiBuilder.middleware(
          GuardrailApi,
          Effect.map(EventsDirect, (direct) => requestPipeline(routes, config.maxBodyBytes, traffic, direct))
        ).pipe(Layer.provide(DirectRoutesLive))
      ),
      Layer.provide(HttpApiBuilder.api(GuardrailApi).pipe(Layer.provide(ApiGroupsLive))),
      Layer.merge(announce)
    )
    return drain.pipe(Layer.provideMerge(served))
  })
)

/** Node's http server at HOST:PORT. */
export const NodeServerLive = Layer.unwrapEffect(
  Effect.map(AppConfig, (config) => NodeHttpServer.layer(createServer, { port: config.port, host: config.host }))
)

export const HttpServerLive = HttpAppLive.pipe(Layer.provide(NodeServerLive))
