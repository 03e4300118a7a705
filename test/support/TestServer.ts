/**
 * The real service (HTTP app + stream workers + platform) on an ephemeral
 * loopback port, over a fresh database; tests talk to it with fetch.
 */
import { HttpServer } from "@effect/platform"
import { Context, Effect, Layer } from "effect"
import { type HostResolver, Resolver } from "../../src/platform/OutboundGuard.js"
import { PlatformCoreLive, PlatformLive } from "../../src/platform/Platform.js"
import { HttpAppLive, nodeServer } from "../../src/Server.js"
import { StreamWorkersLive } from "../../src/StreamWorkers.js"
import { configLayer, type EventLogMode, freshDatabase, quietLogs, settingsFor, testPlatform } from "./TestPlatform.js"

/**
 * Tests send nothing off loopback, DNS queries included: test servers resolve
 * `localhost` and refuse every other name (ENOTFOUND) unless a test passes a
 * resolver of its own.
 */
export const loopbackOnlyResolver: HostResolver = {
  resolve: (host) =>
    host === "localhost" || host.endsWith(".localhost")
      ? Promise.resolve([{ address: "127.0.0.1", family: 4 }])
      : Promise.reject(Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: "ENOTFOUND" }))
}

/**
 * Options of a `layer(...)` over a test server: a generous timeout for its
 * start, and the live clock (`excludeTestServices`), under which the server's
 * timeouts and polling loops advance.
 */
export const SERVER_OPTIONS = { timeout: "180 seconds", excludeTestServices: true } as const

const resolverLayer = (resolver: HostResolver) => Layer.succeed(Resolver, resolver)

export const testServer = (
  mode: EventLogMode,
  extra: Record<string, string> = {},
  resolver: HostResolver = loopbackOnlyResolver
) =>
  Layer.mergeAll(HttpAppLive, StreamWorkersLive).pipe(
    Layer.provideMerge(nodeServer({ port: 0, host: "127.0.0.1" })),
    Layer.provideMerge(testPlatform(mode, extra)),
    Layer.provide(resolverLayer(resolver))
  )

const serverOver = (
  platform: typeof PlatformLive | typeof PlatformCoreLive,
  mode: EventLogMode,
  databaseUrl: string,
  extra: Record<string, string>,
  resolver: HostResolver = loopbackOnlyResolver
) =>
  Layer.mergeAll(HttpAppLive, StreamWorkersLive).pipe(
    Layer.provideMerge(nodeServer({ port: 0, host: "127.0.0.1" })),
    Layer.provideMerge(platform.pipe(Layer.provide(configLayer(settingsFor(mode, databaseUrl, extra))))),
    Layer.provide(resolverLayer(resolver))
  )

/**
 * A second instance of the service over an existing database (given by URL),
 * e.g. with other settings over the data of a first server. It runs without
 * the outbox relay: the first server's relay holds the relay lock, and a
 * relay waiting for that lock does not shut down. Each server gets its own
 * DATA_DIR, so without a shared JWT_SECRET in `extra` their session tokens
 * differ.
 */
export const testServerOver = (mode: EventLogMode, databaseUrl: string, extra: Record<string, string> = {}) =>
  serverOver(PlatformCoreLive, mode, databaseUrl, extra)

/** The whole service (outbox relay included) over an existing database. */
export const testServerWithRelayOver = (mode: EventLogMode, databaseUrl: string, extra: Record<string, string> = {}) =>
  serverOver(PlatformLive, mode, databaseUrl, extra)

/** The URL of the database a `testServerWithDatabase` server runs over. */
export class TestDatabaseUrl extends Context.Tag("test/TestDatabaseUrl")<TestDatabaseUrl, string>() {}

/** Like `testServer`, and also provides `TestDatabaseUrl` (to query the data directly or start a second server over it). */
export const testServerWithDatabase = (
  mode: EventLogMode,
  extra: Record<string, string> = {},
  resolver: HostResolver = loopbackOnlyResolver
) =>
  Layer.unwrapScoped(
    Effect.map(freshDatabase, (url) =>
      Layer.merge(serverOver(PlatformLive, mode, url, extra, resolver), Layer.succeed(TestDatabaseUrl, url))
    )
  )

/**
 * The API alone, as services/api runs it (no stream workers: queued jobs stay queued until a test claims them),
 * over a fresh database it provides as `TestDatabaseUrl`.
 */
export const apiServerWithDatabase = (mode: EventLogMode, extra: Record<string, string> = {}) =>
  Layer.unwrapScoped(
    Effect.map(freshDatabase, (url) =>
      HttpAppLive.pipe(
        Layer.provideMerge(nodeServer({ port: 0, host: "127.0.0.1" })),
        Layer.provideMerge(
          PlatformLive.pipe(Layer.provide(configLayer(settingsFor(mode, url, extra))), Layer.merge(quietLogs))
        ),
        Layer.provide(resolverLayer(loopbackOnlyResolver)),
        Layer.merge(Layer.succeed(TestDatabaseUrl, url))
      )
    )
  )

/** The base URL of the test server, e.g. `http://127.0.0.1:41234`. */
export const baseUrl = Effect.map(HttpServer.HttpServer, (server) =>
  server.address._tag === "TcpAddress" ? `http://127.0.0.1:${server.address.port}` : "http://invalid"
)
