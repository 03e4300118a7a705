/**
 * Closing the HTTP server while a client keeps reconnecting, as an MCP
 * client's event stream does when its stream is cut: the server stops
 * listening before it closes what is connected, so a connection opened in
 * between cannot hold the shutdown until its request or keep-alive timeout
 * (60 and 65 s) while nothing answers it any more.
 */
import { HttpServer } from "@effect/platform"
import { expect, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import { connect as tcpConnect } from "node:net"
import { testServer } from "../support/TestServer.js"

/**
 * A client that asks `/healthz` on each connection and, whenever the server closes it, opens another at
 * once, until a connection is refused.
 */
const reconnectingClient = (port: number) => {
  let refused = false
  let answered = () => {}
  const firstAnswer = new Promise<void>((resolve) => (answered = resolve))
  const open = () => {
    if (refused) return
    const socket = tcpConnect(port, "127.0.0.1")
    socket.on("connect", () => {
      socket.write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n")
    })
    socket.once("data", () => answered())
    socket.on("error", (error: NodeJS.ErrnoException) => {
      if (error.code === "ECONNREFUSED") refused = true
    })
    socket.on("close", open)
  }
  open()
  return { firstAnswer, refused: () => refused }
}

it.live(
  "a client that reconnects as soon as its connection is closed does not hold the server's close",
  () =>
    Effect.gen(function* () {
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(testServer("database"), scope)
      const address = Context.get(context, HttpServer.HttpServer).address
      const port = address._tag === "TcpAddress" ? address.port : 0
      const client = reconnectingClient(port)
      yield* Effect.promise(() => client.firstAnswer)
      const closing = Date.now()
      yield* Scope.close(scope, Exit.void)
      const closedAfter = Date.now() - closing
      // Its reconnection was refused, and the close did not wait for a connection's timeouts.
      expect(client.refused()).toBe(true)
      expect(closedAfter).toBeLessThan(30_000)
    }),
  180_000
)
