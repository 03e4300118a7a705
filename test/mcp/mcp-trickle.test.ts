/**
 * An MCP server that sends its JSON answer's head and then trickles the
 * body a byte at a time: the gateway reads a JSON answer whole before
 * screening it, and used to wait as long as bytes kept coming (an idle
 * timeout never fires), holding the call and its slot. The read now ends at
 * GATEWAY_MAX_STREAM_SECONDS with 502 `mcp_response_unreadable`.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { tricklingServer } from "../platform/outbound-helpers.js"
import { expectError } from "../support/Raw.js"
import { SERVER_OPTIONS, testServerWithDatabase } from "../support/TestServer.js"
import { GATEWAY_SETTINGS } from "../gateway/gateway-helpers.js"
import { mcpTenant, postMessage } from "./mcp-helpers.js"

layer(testServerWithDatabase("database", { ...GATEWAY_SETTINGS, GATEWAY_MAX_STREAM_SECONDS: "1" }), SERVER_OPTIONS)(
  "MCP gateway, a trickled JSON answer",
  (it) => {
    it.scoped("is cut at GATEWAY_MAX_STREAM_SECONDS with 502, not read for as long as bytes come", () =>
      Effect.gen(function* () {
        const trickling = yield* tricklingServer()
        const setup = yield* mcpTenant(`http://127.0.0.1:${trickling.port}/mcp`)
        const answer = yield* postMessage(setup, {
          id: 1,
          method: "initialize",
          params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } }
        })
        expectError(answer, 502, "mcp_response_unreadable")
        expect(answer.text).toContain("took longer than 1 s")
        // About 20 bytes in a second (one every 50 ms), not the 100,000 promised.
        expect(yield* trickling.cutAfter).toBeLessThan(400)
      })
    )
  }
)
