/**
 * An MCP server that sends its JSON answer's head and then trickles the
 * body a byte at a time: the gateway reads a JSON answer whole before
 * screening it, and used to wait as long as bytes kept coming (an idle
 * timeout never fires), holding the call and its slot. The read now ends at
 * GATEWAY_MAX_STREAM_SECONDS with 502 `mcp_response_unreadable`.
 */
import { afterAll, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { expectError, request } from "../support/Raw.js"
import { SERVER_OPTIONS, testServerWithDatabase } from "../support/TestServer.js"
import { GATEWAY_SETTINGS } from "../gateway/gateway-helpers.js"
import { mcpTenant } from "./mcp-helpers.js"

/** Bytes the answer had sent when the gateway closed its connection. */
let cut: (sent: number) => void = () => undefined
const cutAfter = new Promise<number>((resolve) => (cut = resolve))
const trickling = createServer((incoming, response) => {
  incoming.resume()
  let sent = 0
  response.writeHead(200, { "content-type": "application/json", "content-length": "100000" })
  const drip = setInterval(() => {
    sent += 1
    response.write(" ")
  }, 50)
  response.once("close", () => {
    clearInterval(drip)
    cut(sent)
  })
})
await new Promise<void>((resolve) => trickling.listen(0, "127.0.0.1", resolve))
afterAll(() => {
  trickling.closeAllConnections()
  trickling.close()
})

layer(testServerWithDatabase("database", { ...GATEWAY_SETTINGS, GATEWAY_MAX_STREAM_SECONDS: "1" }), SERVER_OPTIONS)(
  "MCP gateway, a trickled JSON answer",
  (it) => {
    it.effect("is cut at GATEWAY_MAX_STREAM_SECONDS with 502, not read for as long as bytes come", () =>
      Effect.gen(function* () {
        const setup = yield* mcpTenant(`http://127.0.0.1:${(trickling.address() as AddressInfo).port}/mcp`)
        const answer = yield* request(`${setup.base}/v1/mcp/${setup.serverId}`, {
          method: "POST",
          headers: {
            authorization: `Bearer ${setup.key}`,
            "content-type": "application/json",
            accept: "application/json, text/event-stream"
          },
          body: JSON.stringify({
            jsonrpc: "2.0",
            id: 1,
            method: "initialize",
            params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } }
          })
        })
        expectError(answer, 502, "mcp_response_unreadable")
        expect(answer.text).toContain("took longer than 1 s")
        // About 20 bytes in a second (one every 50 ms), not the 100,000 promised.
        expect(yield* Effect.promise(() => cutAfter)).toBeLessThan(400)
      })
    )
  }
)
