/**
 * The real service (HTTP app + stream workers + platform) on an ephemeral
 * loopback port, over a fresh database; tests talk to it with fetch.
 */
import { HttpServer } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { createServer } from "node:http"
import { HttpAppLive } from "../../src/Server.js"
import { StreamWorkersLive } from "../../src/StreamWorkers.js"
import { type EventLogMode, testPlatform } from "./TestPlatform.js"

export const testServer = (mode: EventLogMode, extra: Record<string, string> = {}) =>
  Layer.mergeAll(HttpAppLive, StreamWorkersLive).pipe(
    Layer.provideMerge(NodeHttpServer.layer(createServer, { port: 0, host: "127.0.0.1" })),
    Layer.provideMerge(testPlatform(mode, extra))
  )

/** The base URL of the test server, e.g. `http://127.0.0.1:41234`. */
export const baseUrl = Effect.map(HttpServer.HttpServer, (server) =>
  server.address._tag === "TcpAddress" ? `http://127.0.0.1:${server.address.port}` : "http://invalid"
)

export interface JsonResponse {
  readonly status: number
  readonly headers: Headers
  readonly body: unknown
  readonly text: string
}

/** Sends a request and reads the whole answer; `body` is parsed JSON when the answer is JSON. */
export const request = (url: string, init: RequestInit = {}) =>
  Effect.promise(async (): Promise<JsonResponse> => {
    const response = await fetch(url, init)
    const text = await response.text()
    const isJson = (response.headers.get("content-type") ?? "").includes("json") && text !== ""
    return {
      status: response.status,
      headers: response.headers,
      body: isJson ? (JSON.parse(text) as unknown) : text,
      text
    }
  })

export const jsonBody = (value: unknown): RequestInit => ({
  method: "POST",
  headers: { "content-type": "application/json" },
  body: JSON.stringify(value)
})
