/**
 * The HTTP app: the GuardrailApi with its handlers behind the request
 * pipeline, `/openapi.json`, the `/docs` UI and the dashboard, served on the
 * Node server with the fast lane in front (src/http/Server.ts), and drained
 * on shutdown.
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpApiSwagger from "@effect/platform/HttpApiSwagger"
import * as HttpServer from "@effect/platform/HttpServer"
import { Duration, Effect, FiberRef, Layer, LogLevel } from "effect"
import { GuardrailApi } from "./Api.js"
import { DashboardLive } from "./dashboard/Http.js"
import { ApiGroupsLive, HotEndpoints, HotEndpointsLive } from "./Http.js"
import { makeLane } from "./http/Lane.js"
import { requestPipeline } from "./http/Pipeline.js"
import { makeReportPermits } from "./http/ReportPermits.js"
import { makeRouteTable } from "./http/Routes.js"
import { nodeServer, serveApi } from "./http/Server.js"
import { Authenticator } from "./identity/Authenticator.js"
import { drainOnShutdown, makeTraffic, type Traffic } from "./operations/Drain.js"
import { AppConfig } from "./platform/Config.js"

export { nodeServer } from "./http/Server.js"

const routes = makeRouteTable(GuardrailApi)

const announce = Layer.effectDiscard(
  Effect.gen(function* () {
    const server = yield* HttpServer.HttpServer
    if (server.address._tag !== "TcpAddress") return
    const host =
      server.address.hostname === "0.0.0.0" || server.address.hostname === "::" ? "localhost" : server.address.hostname
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

/** The fast lane over the hot endpoints' declarations and the one authenticator. */
const lane = (traffic: Traffic, maxBodyBytes: number) =>
  Effect.gen(function* () {
    const minimum = yield* FiberRef.get(FiberRef.currentMinimumLogLevel)
    return makeLane({
      routes,
      endpoints: yield* HotEndpoints,
      authenticator: yield* Authenticator,
      maxBodyBytes,
      traffic,
      logs: LogLevel.greaterThanEqual(LogLevel.Info, minimum),
      runtime: yield* Effect.runtime<never>()
    })
  })

/** The API on the `NodeServer` and `HttpServer` provided (`nodeServer`; tests put one on port 0). */
export const HttpAppLive = Layer.unwrapEffect(
  Effect.map(AppConfig, (config) => {
    // Requests in flight, drained on shutdown before the handlers and their services are released.
    const traffic = makeTraffic()
    const reports = makeReportPermits(config.maxConcurrentReports, config.maxConcurrentReportsPerWorkspace)
    // Built after (so released before) the server's handlers: the drain finishes while they still work.
    const drain = drainOnShutdown(traffic, Duration.seconds(config.shutdownDrainSeconds))
    const served = serveApi(lane(traffic, config.maxBodyBytes)).pipe(
      Layer.provide(HttpApiSwagger.layer({ path: "/docs" })),
      Layer.provide(DashboardLive),
      Layer.provide(HttpApiBuilder.middlewareOpenApi({ path: "/openapi.json" })),
      Layer.provide(
        HttpApiBuilder.middleware(GuardrailApi, requestPipeline(routes, config.maxBodyBytes, traffic, reports))
      ),
      Layer.provide(HttpApiBuilder.api(GuardrailApi).pipe(Layer.provide(ApiGroupsLive))),
      Layer.provide(Layer.merge(HotEndpointsLive, Authenticator.Default)),
      Layer.merge(announce)
    )
    return drain.pipe(Layer.provideMerge(served))
  })
)

/** Node's http server at HOST:PORT. */
export const NodeServerLive = Layer.unwrapEffect(
  Effect.map(AppConfig, (config) => nodeServer({ port: config.port, host: config.host }))
)

export const HttpServerLive = HttpAppLive.pipe(Layer.provide(NodeServerLive))
