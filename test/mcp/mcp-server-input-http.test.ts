/**
 * An MCP server's `headers` are write-only (docs/mcp.md): a create or patch refused for one bad header
 * names that header, and its answer quotes none of the others, which are credentials (an optional
 * field's "Expected undefined, actual {...}" quoted the whole object); two spellings of one name are
 * refused (only one of their values could be sent). A new url without headers is checked against the
 * headers stored when the change is made, not against those read before another change set some. Odd input to the server routes
 * is a 400 naming the field, never a 500.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import pg from "pg"
import { expectFailure } from "../support/Api.js"
import { serviceWaitsOnLocks } from "../support/Database.js"
import { until } from "../support/Eventually.js"
import { GATEWAY_SETTINGS } from "../gateway/gateway-helpers.js"
import { call, expectValidation } from "../support/Raw.js"
import { SERVER_OPTIONS, TestDatabaseUrl, testServerWithDatabase } from "../support/TestServer.js"
import { AGENT, mcpTenant } from "./mcp-helpers.js"

const SECRET = "Bearer live-credential-0123456789"

layer(testServerWithDatabase("database", GATEWAY_SETTINGS), SERVER_OPTIONS)("MCP server input", (it) => {
  it.effect("a refused header set names the bad header and quotes no other", () =>
    Effect.gen(function* () {
      const setup = yield* mcpTenant("http://127.0.0.1:1/mcp")
      const token = { token: setup.owner.jwt }
      const server = { display_name: "Mail", url: "http://127.0.0.1:1/mcp", agent_id: AGENT }
      const refusals = [
        yield* call(setup.base, "POST", "/v1/mcp/servers", {
          ...token,
          body: { ...server, headers: { Authorization: SECRET, "X-Region": "zürich" } }
        }),
        yield* call(setup.base, "POST", "/v1/mcp/servers", {
          ...token,
          body: { ...server, headers: { Authorization: SECRET, "X-Region": "x".repeat(4_001) } }
        }),
        yield* call(setup.base, "PATCH", `/v1/mcp/servers/${setup.serverId}`, {
          ...token,
          body: { headers: { Authorization: SECRET, "X-Region": "line\nbreak" } }
        }),
        // A credential sent as a list is not quoted back either.
        yield* call(setup.base, "PATCH", `/v1/mcp/servers/${setup.serverId}`, {
          ...token,
          body: { headers: { "X-Region": [SECRET] } }
        })
      ]
      for (const refusal of refusals) {
        const error = expectValidation(refusal, "headers.X-Region")
        expect(error.details?.map((detail) => detail.path)).toEqual(["headers.X-Region"])
        expect(refusal.text).not.toContain("live-credential")
      }
      // Header names ignore case: two spellings of one would send only one of their values.
      const twice = yield* call(setup.base, "PATCH", `/v1/mcp/servers/${setup.serverId}`, {
        ...token,
        body: { headers: { Authorization: SECRET, authorization: "Bearer other" } }
      })
      expect(expectValidation(twice, "headers.authorization").message).toContain("the same header as Authorization")
      expect(twice.text).not.toContain("live-credential")
      // A header named __proto__ is refused, never dropped silently (an object built from the set would not keep it).
      for (const [method, path, rest] of [
        ["POST", "/v1/mcp/servers", JSON.stringify(server).slice(1, -1) + ","],
        ["PATCH", `/v1/mcp/servers/${setup.serverId}`, ""]
      ] as const) {
        const proto = yield* call(setup.base, method, path, {
          ...token,
          raw: `{${rest}"headers":{"X-Region":"eu","__proto__":"${SECRET}"}}`
        })
        expect(expectValidation(proto, "headers.__proto__").message).toContain("is not accepted as a key")
        expect(proto.text).not.toContain("live-credential")
      }
      // The stored headers are untouched by the refused patches.
      const stored = yield* setup.owner.api.mcpServers.getMcpServer({ path: { id: setup.serverId } })
      expect([stored.header_names, stored.headers_status]).toEqual([["X-Upstream-Token"], "configured"])
    })
  )

  it.effect("a url change racing a change that sets headers still needs them", () =>
    Effect.gen(function* () {
      const db = yield* TestDatabaseUrl
      const setup = yield* mcpTenant("http://127.0.0.1:1/mcp")
      const servers = setup.owner.api.mcpServers
      const payload = { display_name: "Bare", url: "http://127.0.0.1:1/mcp", agent_id: AGENT }
      const bare = yield* servers.createMcpServer({ payload })

      // Another session gives the bare server headers (a patch in flight) and holds its row meanwhile.
      const other = new pg.Client({ connectionString: db })
      yield* Effect.promise(() => other.connect())
      yield* Effect.promise(() => other.query("begin"))
      yield* Effect.promise(() =>
        other.query(
          `update mcp_servers set (header_names, encrypted_headers) =
             (select header_names, encrypted_headers from mcp_servers where id = $2) where id = $1`,
          [bare.id, setup.serverId]
        )
      )
      const moving = yield* Effect.fork(
        Effect.exit(servers.updateMcpServer({ path: { id: bare.id }, payload: { url: "http://127.0.0.1:2/mcp" } }))
      )
      yield* until(Effect.filterOrFail(serviceWaitsOnLocks(db, "mcp_servers"), (n) => n >= 1))
      yield* Effect.promise(() => other.query("commit").finally(() => other.end()))

      const refused = yield* expectFailure(Fiber.join(moving).pipe(Effect.flatten), 400, "validation_failed")
      expect(refused.details?.map((detail) => detail.path)).toEqual(["headers"])
      expect((yield* servers.getMcpServer({ path: { id: bare.id } })).url).toBe("http://127.0.0.1:1/mcp")
    })
  )

  it.effect("odd ids, cursors and bodies are 400 naming the field", () =>
    Effect.gen(function* () {
      const setup = yield* mcpTenant("http://127.0.0.1:1/mcp")
      const token = { token: setup.owner.jwt }
      const server = `/v1/mcp/servers/${setup.serverId}`
      const cursorOf = (parts: ReadonlyArray<string>) => Buffer.from(JSON.stringify(parts)).toString("base64url")
      expectValidation(
        yield* call(setup.base, "GET", `${server}/tools?cursor=${cursorOf(["a\u0000"])}`, token),
        "cursor"
      )
      expectValidation(yield* call(setup.base, "GET", `${server}/tools?cursor=${cursorOf([""])}`, token), "cursor")
      expectValidation(yield* call(setup.base, "GET", `/v1/mcp/servers?limit=abc`, token), "limit")
      const accept = yield* call(setup.base, "POST", `${server}/tools/lookup/accept`, {
        ...token,
        body: { seen_digest: "x\u0000" }
      })
      expectValidation(accept, "seen_digest")
      expectValidation(
        yield* call(setup.base, "PATCH", server, { ...token, body: { url: "http://127.0.0.1:1/#x" } }),
        "url"
      )
      const foreignScheme = yield* call(setup.base, "POST", "/v1/mcp/servers", {
        ...token,
        body: { display_name: "Files", url: "file:///etc/passwd", agent_id: AGENT }
      })
      expectValidation(foreignScheme, "url")
    })
  )
})
