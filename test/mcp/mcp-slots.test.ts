/**
 * Call slots through the MCP gateway: each call holds one of the key's and
 * workspace's GATEWAY_MAX_STREAMS_* slots while it is in flight and gives it
 * back when its answer is over, whether the server answers with JSON or an
 * event stream. A JSON answer used to keep its slot, so after the limit's
 * number of calls the key (and then the workspace, on both gateways) got 429.
 */
import { afterAll, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SERVER_OPTIONS, testServerWithDatabase } from "../support/TestServer.js"
import { GATEWAY_SETTINGS } from "../gateway/gateway-helpers.js"
import { startMcpUpstream } from "./mcp-upstream.js"
import { callTool, connect, mcpTenant } from "./mcp-helpers.js"

const sse = await startMcpUpstream()
const json = await startMcpUpstream({ jsonResponse: true })
afterAll(() => Promise.all([sse.close(), json.close()]))

const LIMIT = 2

layer(
  testServerWithDatabase("database", { ...GATEWAY_SETTINGS, GATEWAY_MAX_STREAMS_PER_KEY: String(LIMIT) }),
  SERVER_OPTIONS
)("MCP gateway call slots", (it) => {
  for (const [name, upstream] of [
    ["JSON", json],
    ["SSE", sse]
  ] as const) {
    it.scoped(`${name} answers give their slot back: three times the per-key limit of calls in a row all pass`, () =>
      Effect.gen(function* () {
        const { client } = yield* connect(yield* mcpTenant(upstream.url))
        for (let index = 0; index < LIMIT * 3; index++) {
          const result = yield* callTool(client, "lookup_order", { order_id: `o-${index}` })
          expect(result).toEqual({ text: `Order o-${index}: shipped`, isError: false })
        }
      })
    )
  }
})
