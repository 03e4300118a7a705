/**
 * Spans (docs/architecture.md): with OTEL_EXPORTER_OTLP_ENDPOINT set, a
 * request's trace reaches the OTLP collector showing its steps: the server
 * span, the use case, the authenticator and the SQL it ran, as children of
 * one trace. A stub collector on loopback receives them (OTLP/HTTP JSON).
 * An export to a collector that never answers is abandoned after its time
 * limit, its connection closed.
 */
import { afterAll, describe, expect, it, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { otlpTracing } from "../../src/operations/Tracing.js"
import { Resolver } from "../../src/platform/OutboundGuard.js"
import { HttpAppLive, nodeServer } from "../../src/Server.js"
import { StreamWorkersLive } from "../../src/StreamWorkers.js"
import { createAgent, eventBody, reply } from "../support/Events.js"
import { eventually } from "../support/Eventually.js"
import { tenant } from "../support/Tenants.js"
import { testPlatform } from "../support/TestPlatform.js"
import { baseUrl, loopbackOnlyResolver, SERVER_OPTIONS } from "../support/TestServer.js"

interface ExportedSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string
  readonly name: string
}

interface TracesRequest {
  readonly resourceSpans: ReadonlyArray<{
    readonly scopeSpans: ReadonlyArray<{ readonly spans: ReadonlyArray<ExportedSpan> }>
  }>
}

/** A stub OTLP collector: keeps every span posted to /v1/traces. */
const spans: Array<ExportedSpan> = []
const collector = createServer((request, response) => {
  const chunks: Array<Buffer> = []
  request.on("data", (chunk: Buffer) => chunks.push(chunk))
  request.on("end", () => {
    if (request.url === "/v1/traces") {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as TracesRequest
      for (const resource of body.resourceSpans) for (const scope of resource.scopeSpans) spans.push(...scope.spans)
    }
    response.writeHead(200, { "content-type": "application/json" }).end("{}")
  })
})
await new Promise<void>((resolve) => collector.listen(0, "127.0.0.1", resolve))
afterAll(() => new Promise<void>((resolve) => collector.close(() => resolve())))
const collectorUrl = new URL(`http://127.0.0.1:${(collector.address() as AddressInfo).port}`)

const tracedServer = Layer.mergeAll(HttpAppLive, StreamWorkersLive).pipe(
  Layer.provide(otlpTracing(collectorUrl, "guardrail-test", "10 seconds", "100 millis")),
  Layer.provideMerge(nodeServer({ port: 0, host: "127.0.0.1" })),
  Layer.provideMerge(testPlatform("database")),
  Layer.provide(Layer.succeed(Resolver, loopbackOnlyResolver))
)

/** The spans of the trace that contains a span named `name`, once the collector has one. */
const traceWith = (name: string) =>
  eventually(
    Effect.suspend(() => {
      const found = spans.find((span) => span.name === name)
      return found === undefined
        ? Effect.fail(new Error(`no span ${name} yet (have: ${[...new Set(spans.map((s) => s.name))].join(", ")})`))
        : Effect.succeed(spans.filter((span) => span.traceId === found.traceId))
    }),
    "20 seconds"
  ).pipe(Effect.orDie)

layer(tracedServer, SERVER_OPTIONS)("spans exported over OTLP", (it) => {
  it.effect("a decision's trace shows the server span, the use case and its steps under it", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      yield* createAgent(base, owner, "traced-bot")
      const decision = yield* owner.api.events.authorizeEvent({
        payload: eventBody(owner, "traced-bot", reply("Your order ships tomorrow."))
      })
      expect(decision.effect).toBe("permit")

      const trace = yield* traceWith("Authorization.authorizeEvent")
      const byId = new Map(trace.map((span) => [span.spanId, span]))
      const named = (name: string) => trace.filter((span) => span.name === name)
      const useCase = named("Authorization.authorizeEvent")[0]!
      // The use case runs under the request's server span, and the authenticator beside it in the same trace.
      expect(byId.get(useCase.parentSpanId ?? "")?.name).toBe("http.server POST")
      expect(named("Authenticator.authenticate")).toHaveLength(1)
      // What the Effect path loaded for the step shows as its children (settings, the catalog snapshot).
      const children = trace.filter((span) => span.parentSpanId === useCase.spanId).map((span) => span.name)
      expect(children.length).toBeGreaterThan(0)
    })
  )

  it.effect("a router request's trace names its use case", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const run = yield* owner.api.runs.createRun({ payload: { agent_id: "traced-bot", kind: "job" } })
      expect(run.status).toBe("running")
      const trace = yield* traceWith("Runs.create")
      expect(trace.map((span) => span.name)).toContain("http.server POST")
    })
  )
})

describe("a collector that never answers", () => {
  it.live("each export is abandoned after the time limit, its connection closed", () =>
    Effect.gen(function* () {
      let received = 0
      let abandoned = 0
      const silent = createServer((request, response) => {
        received++
        request.resume()
        response.once("close", () => abandoned++)
      })
      yield* Effect.acquireRelease(
        Effect.promise(() => new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve))),
        () =>
          Effect.promise(() => {
            silent.closeAllConnections()
            return new Promise<void>((resolve) => silent.close(() => resolve()))
          })
      )
      const url = new URL(`http://127.0.0.1:${(silent.address() as AddressInfo).port}`)
      yield* Effect.void.pipe(
        Effect.withSpan("probe"),
        Effect.zipRight(
          eventually(Effect.suspend(() => (abandoned > 0 ? Effect.void : Effect.fail(`abandoned 0 of ${received}`))))
        ),
        Effect.provide(otlpTracing(url, "guardrail-test", "200 millis", "50 millis"))
      )
      expect(received).toBeGreaterThanOrEqual(abandoned)
    }).pipe(Effect.scoped)
  )
})
